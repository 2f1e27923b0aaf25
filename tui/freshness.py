"""How current the data on screen is: when the store was last read, and what stops it being read now.

The TUI never blocks on the store; when a read fails because another process holds the file (or the file went
away), what is on screen is the last data read, and the status bar says so with the time it was read until a read
succeeds again. Worker threads write here and the event loop reads: single assignments, no lock needed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime

from pcmem import StoreError, StoreLockedError

#: The wall clock the status bar reads (tests fix it, so screenshots do not depend on the time they were taken).
clock = datetime.now

#: pcmem's StoreLockedError names the holder ("… is in use by process 4242 (pcmem) (waited 2 s); …").
_HOLDER = re.compile(r" is in use by (.+?)(?: \(waited [^)]*\))?(?:;|$)")


#: Seconds between the looks at a store that fails for another reason than a holder (damaged, gone, unreadable):
#: doubling from the first, and none after the last (a damaged file does not mend itself; ``r`` tries again).
RETRY_AFTER = (1, 2, 4, 8, 16)


@dataclass
class Freshness:
    read_at: datetime | None = None
    failed_at: datetime | None = None
    failure: str | None = None
    holder: str | None = None
    #: Failures in a row that were not a holder's (how far the retries have backed off).
    failures: int = 0
    #: When the watcher may look again (monotonic seconds; 0: at once).
    retry_at: float = 0.0

    @property
    def stale(self) -> bool:
        """The last store call failed for a reason outside the TUI (held, moved, unreadable): retry by itself."""
        return self.failure is not None

    @property
    def gave_up(self) -> bool:
        """The store failed :data:`RETRY_AFTER` times in a row for a reason no wait mends: no more looks by itself."""
        return self.stale and self.holder is None and self.failures > len(RETRY_AFTER)

    def due(self) -> bool:
        """Whether the watcher should look at a stale store now: a held one every time (the holder may let go at
        any moment), another one after its backed-off wait, and never once it gave up."""
        return not self.gave_up and time.monotonic() >= self.retry_at

    def note_read(self) -> None:
        self.read_at, self.failed_at, self.failure, self.holder = clock(), None, None, None
        self.failures, self.retry_at = 0, 0.0

    def note_failure(self, error: StoreError) -> None:
        if self.failure is None:
            self.failed_at = clock()
        self.failure = str(error)
        self.holder = holder_of(error)
        if self.holder is None:
            self.failures += 1
            if self.failures <= len(RETRY_AFTER):
                self.retry_at = time.monotonic() + RETRY_AFTER[self.failures - 1]

    def describe(self) -> str:
        """One line for the status bar: the time of the last good read, and why the data may be old."""
        read = f"read {self.read_at:%H:%M:%S}" if self.read_at else "not read yet"
        if not self.stale:
            return f"live · {read}"
        if self.holder:
            return f"⚠ stale ({read}) · held by {self.holder} · retrying"
        if self.gave_up:
            return f"✗ stale ({read}) · store unreadable · stopped retrying (r tries again)"
        return f"⚠ stale ({read}) · store unreadable · retrying in {RETRY_AFTER[self.failures - 1]} s"


def damaged(error: StoreError) -> bool:
    """Whether ``error`` says the file's contents are damaged (a checksum that fails): waiting does not mend it."""
    text = str(error)
    return "Corrupt database file" in text or "damaged" in text


def advice(error: StoreError, path: object) -> str:
    """What to do, as ``pcmem check`` says it: check says which blocks and tables are damaged and whether a copy
    rescues the rest; without a copy that works, a backup is the way back, and the damaged file is kept."""
    return (f"what to do: run `pcmem --db {path} check` to see what is damaged; if pcmem's own records are, restore "
            "the store from a backup (keep the damaged file)") if damaged(error) else ""


def holder_of(error: StoreError) -> str | None:
    """Who holds the file, as pcmem's message names it (``None`` for other store errors)."""
    if not isinstance(error, StoreLockedError):
        return None
    match = _HOLDER.search(str(error))
    return match.group(1) if match else "another process"
