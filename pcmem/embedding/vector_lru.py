"""A bounded, thread-safe LRU of vectors, exact by construction: a vector is a function of its text alone (batching
never changes one), so a kept vector is never stale.

Embedders keep their last query vectors in one (a search embeds its query once per model, however many stages ask —
the store's vector channel, then an embedding reranker on the same model — and however often an agent or the TUI
repeats it); the embedding reranker keeps candidates' vectors in another, by (profile, text digest)."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from pcmem.lru import LRU

QUERY_MEMO_SIZE = 256  # queries kept per embedder (768-d float32: 0.8 MB)


class VectorLRU(LRU[Hashable, np.ndarray]):
    """Vectors by key, the least recently used dropped beyond ``size``."""

    def __init__(self, size: int) -> None:
        super().__init__(size)

    def memoised(self, key: str, compute: Callable[[str], np.ndarray]) -> np.ndarray:
        """The vector of ``key`` (a text), computed on a miss outside the lock; every caller gets its own copy."""
        vector = self.get(key)
        if vector is None:
            vector = np.array(compute(key), dtype=np.float32)
            self.put(key, vector)
        return vector.copy()


def query_memo() -> VectorLRU:
    """An embedder's memo of its last query vectors."""
    return VectorLRU(QUERY_MEMO_SIZE)
