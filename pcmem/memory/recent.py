"""The newest active entries of a scope, read from its latest revisions back, not from its whole manifest.

An entry is as recent as the last revision that wrote it (remember, revise, reactivate), dated by that revision's
time: the order in which the scope was written, which is what an agent resuming a session wants to see first. The
revisions are read in windows from the head back (16, then 4× more each time) until enough active entries are found
or the window starts before ``since``, so a scope of 100,000 entries costs what its last few writes cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from pcmem.store.port import RevisionLog
from pcmem.types.context import RecentEntry, RecentPage
from pcmem.types.memory import MemoryRef

#: Revisions the first window reads; each next window reads 4× as many.
FIRST_WINDOW = 16
#: Operations after which the entry they name is active (retire and forget leave it inactive).
_WRITES_ACTIVE = frozenset({"remember", "revise", "reactivate"})


def recent_entries(backend: RevisionLog, memory: MemoryRef | None, limit: int,
                   since: datetime | None = None) -> list[RecentEntry]:
    """Up to ``limit`` active entries of ``memory`` (at its revision), newest write first (ties: entry id), written
    at or after ``since`` if given."""
    if memory is None:
        return []
    window = FIRST_WINDOW
    while True:
        start = max(0, memory.revision - window)
        written = dict(_newest_writes(backend, memory, start, since))
        if len(written) >= limit or start == 0 or _older_than(backend, memory, start, since):
            break
        window *= 4
    order = sorted(written.items(), key=lambda item: (-item[1][0], item[0]))
    found = []
    for entry_id, (_, at) in order:
        entry = backend.entry_in_revision(memory, entry_id)
        if entry is not None and entry.state == "active":
            found.append(RecentEntry(scope=memory.scope, written_at=at, entry=entry))
            if len(found) == limit:
                break
    return found


def _newest_writes(backend: RevisionLog, memory: MemoryRef, start: int,
                   since: datetime | None) -> Iterable[tuple[str, tuple[int, datetime]]]:
    """(entry id, (revision, time)) of each entry whose newest change after ``start`` left it active, newest first."""
    times = {info.revision: info.created_at for info in backend.revisions(memory, since=start)}
    seen: set[str] = set()
    for change in reversed(backend.changes(memory, start)):
        if change.entry_id in seen:
            continue
        seen.add(change.entry_id)
        at = times[change.revision]
        if change.operation in _WRITES_ACTIVE and (since is None or at >= since):
            yield change.entry_id, (change.revision, at)


def _older_than(backend: RevisionLog, memory: MemoryRef, start: int, since: datetime | None) -> bool:
    """Whether revision ``start`` (the newest the window left out) was written before ``since``: every older write is
    then too old as well."""
    if since is None or start == 0:
        return False
    info = backend.revisions(memory, since=start - 1)
    return bool(info) and info[0].created_at < since


def recent_page(backend: RevisionLog, heads: Sequence[MemoryRef | None], limit: int,
                since: datetime | None = None) -> RecentPage:
    """The ``limit`` newest active entries of several scopes (each at the head given; ``None``: no memory), newest
    write first, ties broken by scope."""
    found = [item for memory in heads for item in recent_entries(backend, memory, limit, since)]
    # Stable: ties keep each scope's own order (newest revision first, then entry id).
    found.sort(key=lambda item: (-item.written_at.timestamp(), item.scope))
    return RecentPage(entries=tuple(found[:limit]), memories=tuple(m for m in heads if m is not None))
