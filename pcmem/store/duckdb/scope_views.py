"""What the per-scope in-process search views share: the entry events that moved a scope's head since the revision
a view reflects, and a least-recently-used map of views bounded by the entries they hold.

The in-process search views (:mod:`~pcmem.store.duckdb.fts_cache`, :mod:`~pcmem.store.duckdb.vector_cache`) keep
one object per scope. A store with many scopes — one per user, project or conversation — must not grow a process
without bound, so each cache holds at most ``budget`` entries in all; the least recently searched scopes go first
(a scope alone larger than the budget is still kept while it is the one in use). Not thread-safe: the caches call
it under their own lock.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

import duckdb

from pcmem.types.memory import MemoryRef

V = TypeVar("V")

#: Entries an in-process view may hold per store and channel. ~1 KB per entry for the full-text postings and
#: ~1.5 KB for 384-d vectors: ~250 MB per channel at the bound.
DEFAULT_BUDGET = 200_000


def head_moves(db: duckdb.DuckDBPyConnection, memory: MemoryRef, since: int) -> list[tuple[str, str, str]]:
    """(entry_id, entry_version_id, state) of every entry whose head moved after revision ``since`` up to
    ``memory.revision``: its latest event in that range (O(change), read in the caller's snapshot)."""
    rows = db.execute(
        """SELECT entry_id, arg_max(entry_version_id, revision), arg_max(state, revision)
           FROM entry_events WHERE artifact_id = ? AND revision > ? AND revision <= ? GROUP BY entry_id""",
        [memory.artifact_id, since, memory.revision],
    ).fetchall()
    return [(entry_id, version_id, state) for entry_id, version_id, state in rows]


class ScopeLRU(Generic[V]):
    def __init__(self, budget: int | None = None) -> None:
        self._items: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._total = 0
        self.budget = DEFAULT_BUDGET if budget is None else budget

    def get(self, key: str) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: str, value: V, cost: int) -> None:
        """Keep ``value`` as the most recently used (re-``put`` after it grows so its cost stays true)."""
        old = self._items.pop(key, None)
        if old is not None:
            self._total -= old[1]
        self._items[key] = (value, cost)
        self._total += cost
        while self._total > self.budget and len(self._items) > 1:
            _, (_, freed) = self._items.popitem(last=False)
            self._total -= freed

    def clear(self) -> None:
        self._items.clear()
        self._total = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def total(self) -> int:
        return self._total
