"""How current the data on screen is: when the store was last read, and what stops it being read now.

The TUI never blocks on the store; when a read fails because another process holds the file (or the file went
away), what is on screen is the last data read, and the status bar says so with the time it was read until a read
succeeds again. Worker threads write here and the event loop reads: single assignments, no lock needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from pcmem import StoreError, StoreLockedError

#: The wall clock the status bar reads (tests fix it, so screenshots do not depend on the time they were taken).
clock = datetime.now

#: pcmem's StoreLockedError names the holder ("… is in use by process 4242 (pcmem) (waited 2 s); …").
_HOLDER = re.compile(r" is in use by (.+?)(?: \(waited [^)]*\))?(?:;|$)")


@dataclass
class Freshness:
    read_at: datetime | None = None
    failed_at: datetime | None = None
    failure: str | None = None
    holder: str | None = None

    @property
    def stale(self) -> bool:
        """The last store call failed for a reason outside the TUI (held, moved, unreadable): retry by itself."""
        return self.failure is not None

    def note_read(self) -> None:
        self.read_at, self.failed_at, self.failure, self.holder = clock(), None, None, None

    def note_failure(self, error: StoreError) -> None:
        if self.failure is None:
            self.failed_at = clock()
        self.failure = str(error)
        self.holder = holder_of(error)

    def describe(self) -> str:
        """One line for the status bar: the time of the last good read, and why the data may be old."""
        read = f"read {self.read_at:%H:%M:%S}" if self.read_at else "not read yet"
        if not self.stale:
            return f"live · {read}"
        why = f"held by {self.holder}" if self.holder else "store unreadable"
        return f"⚠ stale ({read}) · {why} · retrying"


def holder_of(error: StoreError) -> str | None:
    """Who holds the file, as pcmem's message names it (``None`` for other store errors)."""
    if not isinstance(error, StoreLockedError):
        return None
    match = _HOLDER.search(str(error))
    return match.group(1) if match else "another process"
