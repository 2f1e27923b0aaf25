"""Any model from fastembed's own catalogue, by name (``--embedder fastembed:BAAI/bge-small-en-v1.5``).

Thin on purpose, and the one embedder pcmem cannot exercise offline: fastembed downloads catalogue models into its
cache on first use, so this works only on a machine that can reach the model hub once (or whose fastembed cache
already holds the model). pcmem's presets and local directories never download.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from pcmem.embedding.port import EmbeddingProfile, ProgressCallback
from pcmem.errors import ConfigurationError, EmbeddingError, InputError


def _catalogue() -> dict[str, dict[str, Any]]:
    try:
        from fastembed import TextEmbedding
    except ImportError as exc:
        raise ConfigurationError("fastembed is not installed: pip install 'fastembed==0.9.1'") from exc
    return {m["model"].lower(): m for m in TextEmbedding.list_supported_models()}


class FastembedCatalogEmbedder:
    """A fastembed catalogue model; its profile is ``fastembed:<name>`` with the catalogue's dimension."""

    def __init__(self, model_name: str, batch_size: int = 16) -> None:
        entry = _catalogue().get(model_name.lower())
        if entry is None or model_name.lower().startswith("pcmem/"):
            raise InputError(f"fastembed does not know the model {model_name!r} (see fastembed's supported models)")
        self.model_name = entry["model"]
        self._profile = EmbeddingProfile(f"fastembed:{self.model_name}", int(entry["dim"]), True)
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                from fastembed import TextEmbedding

                try:
                    self._model = TextEmbedding(self.model_name, threads=1)
                except Exception as exc:
                    raise EmbeddingError(f"fastembed could not load {self.model_name} (it downloads catalogue models "
                                         f"on first use, which needs network access): {exc}") from exc
        return self._model

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        if not texts:
            return np.empty((0, self._profile.dimension), dtype=np.float32)
        try:
            rows = np.stack(list(self._loaded().embed(list(texts), batch_size=self.batch_size))).astype(np.float32)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"embedding {len(texts)} texts with {self.model_name} failed: {exc}") from exc
        if progress is not None:
            progress(len(texts), len(texts))
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
