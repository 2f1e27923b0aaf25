"""The embedder port: text in, unit vectors out, with a profile that names the vector space."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.progress import Progress

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns texts into float32 vectors of ``profile.dimension``.

    Implementations load their model lazily (the first embed call), never download anything, and raise
    :class:`~pcmem.errors.EmbeddingError` when the model cannot be loaded or fails.
    """

    @property
    def profile(self) -> EmbeddingProfile:
        """The vector space this embedder produces; available without loading the model."""

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Embed stored texts: shape (len(texts), dimension), float32, unit length when profile.normalized."""

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query: shape (dimension,), float32."""
