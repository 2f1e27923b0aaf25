"""What the per-scope in-process search views share: the entry events that moved a scope's head since the revision
a view reflects, and a least-recently-used map of views bounded by the entries they hold.

The in-process search views (:mod:`~pcmem.store.duckdb.fts_cache`, :mod:`~pcmem.store.duckdb.vector_cache`) keep
one object per scope. A store with many scopes — one per user, project or conversation — must not grow a process
without bound, so each cache holds at most ``budget`` entries in all; the least recently searched scopes go first
(a scope alone larger than the budget is still kept while it is the one in use).
"""

from __future__ import annotations

from typing import TypeVar

import duckdb

from pcmem.lru import LRU
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


class ScopeLRU(LRU[str, V]):
    """Scopes' views by scope key, bounded by their entries (``budget``), the least recently used out first."""

    def __init__(self, budget: int | None = None) -> None:
        super().__init__(DEFAULT_BUDGET if budget is None else budget)

    @property
    def budget(self) -> int:
        return self.capacity

    @budget.setter
    def budget(self, value: int) -> None:
        self.capacity = value
