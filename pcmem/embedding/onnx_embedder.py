"""Sentence embeddings run by fastembed (ONNX): one class for every preset, local directory and catalogue model.

The model loads on the first embed call (so building an embedder, or importing pcmem, stays cheap) and texts are
batched by similar length. Local directories (:meth:`OnnxEmbedder.from_directory`) never download anything.

Batch independence: a text's vector must not depend on the texts it happens to be embedded with. fp32 models (and
the MiniLM int8 export, whose activations are quantised per row) give identical vectors alone or batched. Dynamic
int8 models quantise activations per *tensor*, so batch neighbours change each other's vectors (cos ≈ 0.94 seen for
mpnet); those run with ``batch_size=1`` — which is also faster for them here, as no padding is computed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pcmem.errors import ConfigurationError, EmbeddingError, PcmemError
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.progress import Progress

if TYPE_CHECKING:
    import numpy as np

_load_lock = threading.Lock()  # guards model loading and fastembed's process-global model registry


def open_fastembed(model_dir: Path, *, name: str, hf_source: str, dimension: int,
                   pooling: Literal["mean", "cls"] = "mean", threads: int = 1) -> Any:
    """Register ``model_dir``'s ``model.onnx`` with fastembed under ``name`` (once per process) and open a session."""
    try:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
    except ImportError as exc:
        raise ConfigurationError("fastembed is not installed: pip install 'fastembed==0.9.1'") from exc
    try:
        with _load_lock:
            known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
            if name.lower() not in known:
                TextEmbedding.add_custom_model(
                    model=name, pooling=PoolingType.MEAN if pooling == "mean" else PoolingType.CLS,
                    normalization=True, sources=ModelSource(hf=hf_source), dim=dimension, model_file="model.onnx")
        # cache_dir is passed only so fastembed does not create its default folder in the temp dir.
        return TextEmbedding(name, cache_dir=str(model_dir), specific_model_path=str(model_dir),
                             local_files_only=True, threads=threads)
    except Exception as exc:
        raise EmbeddingError(f"cannot load the embedding model from {model_dir}: {exc}") from exc


class OnnxEmbedder:
    """Vectors of ``profile.dimension`` from a fastembed model that ``load`` opens on first use.

    ``load`` returns a fastembed ``TextEmbedding`` (or raises a typed pcmem error); ``normalize`` rescales rows to
    unit length, for models that do not (pcmem's own model directories are registered with normalisation on).
    """

    def __init__(self, profile: EmbeddingProfile, load: Callable[[], Any], *, batch_size: int = 16,
                 normalize: bool = False) -> None:
        self._profile = profile
        self._load = load
        self.batch_size = batch_size
        self._normalize = normalize
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_directory(cls, profile: EmbeddingProfile, model_dir: Callable[[], Path], *, fastembed_name: str,
                       hf_source: str, batch_size: int = 16, pooling: Literal["mean", "cls"] = "mean") -> OnnxEmbedder:
        """A sentence-transformer ONNX directory; ``model_dir`` returns it verified, or raises
        ConfigurationError/EmbeddingError."""
        return cls(profile, lambda: open_fastembed(model_dir(), name=fastembed_name, hf_source=hf_source,
                                                   dimension=profile.dimension, pooling=pooling),
                   batch_size=batch_size)

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    def _loaded(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Texts are batched by similar length (less padding, faster); rows come back in input order."""
        import numpy as np  # lazy: numpy costs ~0.15-0.2 s of a cold CLI call that searches full text only
        total = len(texts)
        out = np.empty((total, self._profile.dimension), dtype=np.float32)
        order = sorted(range(total), key=lambda i: len(texts[i]))
        model = self._loaded() if total else None
        for start in range(0, total, self.batch_size):
            rows = order[start:start + self.batch_size]
            assert model is not None  # loaded above: there are texts
            try:
                out[rows] = np.stack(list(model.embed([texts[i] for i in rows], batch_size=len(rows))))
            except PcmemError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"embedding a batch of {len(rows)} texts failed: {exc}") from exc
            if progress is not None:
                progress(start + len(rows), total)
        if self._normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
