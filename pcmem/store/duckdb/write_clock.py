"""The write clock of a store file in this process: what a search may remember lasts until it moves.

Every write transaction of the file moves it just before its COMMIT and just after it (:mod:`.transactions`): until
it commits, no other transaction sees what it wrote (DuckDB's MVCC), so a write under way leaves what searches read
unchanged. A change made outside a transaction (a reclaim, an index rebuild) ticks it. :mod:`.generation_memo` says why
that is enough.
"""

from __future__ import annotations

import threading
from pathlib import Path


class WriteClock:
    """Counts the commits of write transactions of one store file in this process: begun and ended. It stands still
    at ``g`` while ``begun == ended == g``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._begun = 0
        self._ended = 0

    def begin(self) -> None:
        with self._lock:
            self._begun += 1

    def end(self) -> None:
        with self._lock:
            self._ended += 1

    def tick(self) -> None:
        """A change made outside a write transaction (a reclaim, an index rebuild): what was read before is stale."""
        with self._lock:
            self._begun += 1
            self._ended += 1

    def begun(self) -> int:
        """How many write transactions of the file began to commit in this process (each change outside one counts
        too): inside a write, the count of the writes committed before it."""
        with self._lock:
            return self._begun

    def standing(self) -> int | None:
        """The generation when no write is committing, else None."""
        with self._lock:
            return self._begun if self._begun == self._ended else None

    def still(self, generation: int) -> bool:
        """No write began to commit since the clock stood at ``generation``."""
        with self._lock:
            return self._begun == generation


_CLOCKS: dict[Path, WriteClock] = {}
_CLOCKS_LOCK = threading.Lock()


def clock_for(path: Path) -> WriteClock:
    """The one clock of a file in this process: every backend of the path shares it (they share DuckDB's instance,
    so a write through one changes what the other reads)."""
    with _CLOCKS_LOCK:
        return _CLOCKS.setdefault(path, WriteClock())

