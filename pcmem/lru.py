"""One bounded, thread-safe least-recently-used map, for every cache pcmem keeps in a process.

Each item has a cost (1 unless said otherwise: a scope's view costs its entries); beyond ``capacity`` the least
recently used items go, but never the last one (a view bigger than the budget is still kept while it is in use).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The kept value (made the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The kept values of ``keys`` (each made the most recently used), under one acquisition of the lock: a
        search page asks for ~100 at a time."""
        found: dict[K, V] = {}
        with self._lock:
            items = self._items
            for key in keys:
                item = items.get(key)
                if item is not None:
                    items.move_to_end(key)
                    found[key] = item[0]
        return found

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is kept (a hit makes it the most recently used)."""
        with self._lock:
            if key not in self._items:
                return False
            self._items.move_to_end(key)  # type: ignore[arg-type]
            return True

    def put(self, key: K, value: V, cost: int = 1) -> None:
        """Keep ``value`` as the most recently used (``put`` again after it grows, so its cost stays true)."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= old[1]
            self._items[key] = (value, cost)
            self._total += cost
            while self._total > self.capacity and len(self._items) > 1:
                _, (_, freed) = self._items.popitem(last=False)
                self._total -= freed

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def total(self) -> int:
        """The summed cost of the kept items."""
        return self._total
