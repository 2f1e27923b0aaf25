"""Embeddings: the embedder port and its local adapters."""

from pcmem.embedding.port import Embedder, EmbeddingProfile

__all__ = ["Embedder", "EmbeddingProfile"]
