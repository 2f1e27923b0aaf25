"""Embeddings: the embedder port and its local adapters."""

from pcmem.embedding.port import Embedder
from pcmem.types.embedding import EmbeddingProfile

__all__ = ["Embedder", "EmbeddingProfile"]
