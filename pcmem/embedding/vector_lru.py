"""A bounded, thread-safe LRU of vectors, exact by construction: a vector is a function of its text alone (batching
never changes one), so a kept vector is never stale.

Embedders keep their last query vectors in one (a search embeds its query once per model, however many stages ask —
the store's vector channel, then an embedding reranker on the same model — and however often an agent or the TUI
repeats it); the embedding reranker keeps candidates' vectors in another, by (profile, text digest)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

QUERY_MEMO_SIZE = 256  # queries kept per embedder (768-d float32: 0.8 MB)


class VectorLRU:
    """Vectors by key, the least recently used dropped beyond ``size``."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._vectors: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> np.ndarray | None:
        """The kept vector (shared: callers must not write to it), or None."""
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
            return vector

    def put(self, key: Hashable, vector: np.ndarray) -> None:
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)

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
