"""What the per-scope in-process search views share: the entry events that moved a scope's head since the revision
a view reflects, and a least-recently-used map of views bounded by the entries they hold.

The in-process search views (:mod:`~pcmem.store.duckdb.fts_cache`, :mod:`~pcmem.store.duckdb.vector_cache`) keep
one object per scope. A store with many scopes — one per user, project or conversation — must not grow a process
without bound, so each cache holds at most ``budget`` entries in all; the least recently searched scopes go first
(a scope alone larger than the budget is still kept while it is the one in use).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import duckdb

from pcmem.lru import LRU
from pcmem.types.memory import MemoryRef

V = TypeVar("V")

#: Seconds a search waits for another thread bringing the same scope's view up before it reads the events itself (a
#: safety net: the other thread's reads take milliseconds).
CATCH_UP_WAIT = 5.0

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


class RowIds:
    """The (entry_id, entry_version_id) of each row (slot) of a scope's view, as two lists of strings.

    Why not a tuple per row: strings are not tracked by Python's cycle collector, tuples are (until a collection
    untracks them), so a scope loaded as 10,000 tuples made the collector run a full pass right then — tens of ms
    holding the GIL, which an app's UI thread or asyncio loop waited for."""

    __slots__ = ("entry_ids", "version_ids")

    def __init__(self, entry_ids: list[str] | None = None, version_ids: list[str] | None = None) -> None:
        self.entry_ids: list[str] = entry_ids if entry_ids is not None else []
        self.version_ids: list[str] = version_ids if version_ids is not None else []

    def __len__(self) -> int:
        return len(self.entry_ids)

    def __getitem__(self, row: int) -> tuple[str, str]:
        return self.entry_ids[row], self.version_ids[row]

    def at(self, rows: list[int]) -> list[tuple[str, str]]:
        """The ids of ``rows``, in order (a channel's tie-break compares them)."""
        return list(zip(map(self.entry_ids.__getitem__, rows), map(self.version_ids.__getitem__, rows), strict=True))

    def append(self, entry_id: str, version_id: str) -> None:
        self.entry_ids.append(entry_id)
        self.version_ids.append(version_id)

    def extend(self, entry_ids: list[str], version_ids: list[str]) -> None:
        self.entry_ids.extend(entry_ids)
        self.version_ids.extend(version_ids)

    def move(self, to_row: int, from_row: int) -> None:
        """Row ``to_row`` takes ``from_row``'s ids (a swap-remove; the caller pops the last row)."""
        self.entry_ids[to_row] = self.entry_ids[from_row]
        self.version_ids[to_row] = self.version_ids[from_row]

    def pop(self) -> None:
        self.entry_ids.pop()
        self.version_ids.pop()

    def keep(self, rows: list[int]) -> RowIds:
        """Only ``rows``, in that order."""
        return RowIds([self.entry_ids[row] for row in rows], [self.version_ids[row] for row in rows])

    def row_of(self) -> dict[str, int]:
        """Entry id → its row."""
        return dict(zip(self.entry_ids, range(len(self.entry_ids)), strict=True))


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


class CatchUps:
    """One thread at a time reads what several threads miss at once; the others wait for it instead of reading the
    same rows again. After each write every searching thread's next search finds a scope's view behind its head
    (and the search memo without the head and the index totals): with four threads each read the events, the
    documents and their postings since, so a write cost its catch-up four times over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, threading.Event] = {}

    @contextmanager
    def lead_or_wait(self, key: str) -> Iterator[bool]:
        """True: this thread reads ``key`` (a scope's view, a memo entry) and keeps it. False: another thread was
        doing it and has finished (or the wait timed out); the caller looks again."""
        with self._lock:
            running = self._running.get(key)
            if running is None:
                done = self._running[key] = threading.Event()
        if running is not None:
            running.wait(CATCH_UP_WAIT)
            yield False
            return
        try:
            yield True
        finally:
            with self._lock:
                del self._running[key]
            done.set()
