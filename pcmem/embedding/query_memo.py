"""The last query vectors an embedder computed, by text: a search embeds its query once per model, however many
stages ask (the store's vector channel, then an embedding reranker on the same model) and however often an agent or
the TUI repeats it. Exact: a vector is a function of its text alone (batching never changes one)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

QUERY_MEMO_SIZE = 256  # queries kept per embedder (768-d float32: 0.8 MB)


class QueryMemo:
    """A thread-safe LRU of query text -> vector; every caller gets its own copy."""

    def __init__(self, size: int = QUERY_MEMO_SIZE) -> None:
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, compute: Callable[[str], np.ndarray]) -> np.ndarray:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
                return vector.copy()
        vector = np.array(compute(text), dtype=np.float32)  # computed outside the lock (another query may run)
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return vector.copy()
