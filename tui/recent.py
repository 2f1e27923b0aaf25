"""Who changed what, just now: the newest entry changes of a few scopes, with each revision's time and reason.

pcmem records no writer's name; a revision's ``reason`` is what an agent or the CLI said about the write, and its
time says when. Reads: per scope one page of changes, the revisions' times, and each changed entry as of its change.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pcmem import NotFoundError

#: The clock marks fade by (a test moves it on).
clock = time.monotonic

#: How many of the newest changes are shown, and from how many scopes at most (the ones changed last).
RECENT, RECENT_SCOPES = 30, 5


@dataclass(frozen=True)
class RecentChange:
    """One entry changed in one revision, with the revision's time and reason."""

    scope: str
    revision: int
    at: datetime
    operation: str
    entry_id: str
    reason: str | None
    #: The entry's text as of that revision ("" for a forget: nothing of it is left to show).
    text: str


def recent_changes(memory: Any, scopes: list[str], limit: int = RECENT) -> list[RecentChange]:
    """The newest ``limit`` changes of ``scopes`` (``memory``: a SyncMemoryService), newest first. Raises
    PcmemError."""
    found: list[RecentChange] = []
    for scope in scopes:
        found += _recent_in(memory.for_scope(scope), limit)
    found.sort(key=lambda change: (change.at, change.revision), reverse=True)
    return found[:limit]


def _recent_in(memory: Any, limit: int) -> list[RecentChange]:
    head = memory.head()
    if head is None:
        return []
    since = max(0, head.revision - limit)
    times = {info.revision: info.created_at for info in memory.revisions() if info.revision > since}
    recent = []
    for change in memory.changes(since, limit=100).changes[-limit:]:
        recent.append(RecentChange(scope=memory.scope, revision=change.revision, at=times[change.revision],
                                   operation=change.operation, entry_id=change.entry_id, reason=change.reason,
                                   text=_text(memory, change)))
    return recent


def _text(memory: Any, change: Any) -> str:
    if change.operation == "forget":
        return ""
    try:
        return str(memory.get_entry(change.entry_id, change.revision).entry.text)
    except NotFoundError:  # forgotten since
        return ""


class JustChanged:
    """Entry ids another process changed moments ago, marked on the list until :data:`SHOWN_FOR` seconds pass
    (k9s and lazygit show a row that changed under you the same way)."""

    SHOWN_FOR = 5.0

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    def mark(self, entry_ids: Iterable[str]) -> bool:
        """Mark ``entry_ids``; whether any was."""
        until = clock() + self.SHOWN_FOR
        marked = False
        for entry_id in entry_ids:
            self._until[entry_id], marked = until, True
        return marked

    def __contains__(self, entry_id: object) -> bool:
        return self._until.get(str(entry_id), 0.0) > clock()

    def fade(self) -> None:
        """Forget the marks whose time is up."""
        now = clock()
        self._until = {entry_id: until for entry_id, until in self._until.items() if until > now}

    def __bool__(self) -> bool:
        return bool(self._until)
