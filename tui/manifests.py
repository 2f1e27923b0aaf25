"""One scope's entries at one revision, read whole once and then brought forward (or back) by the changes between.

Reading a 10,000-entry manifest builds 10,000 entry objects (0.5 s on a quiet machine, seconds under load, in a
thread that holds the GIL between DuckDB calls), and the entries screen read it again on every outside write, every
return from an entry and every step to a neighbouring revision. Between two revisions only the entries the changes
name differ, so a reread costs the store's head, its changes since and one read per changed entry; the whole
manifest is read again only when many entries changed or an entry was forgotten (which rewrites past revisions).

A whole read of a big scope still takes that long, so it starts with one page: the first entries (in entry-id order,
which is creation order for generated ids) reach the screen after a read that costs a page, and the whole manifest
follows; sorting and filtering then run over every entry again. Only whole manifests are kept for the next read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pcmem import EntryNotFoundError, ListRequest, MemoryEntry, MemoryRef

#: How many changed entries are read one by one before the whole manifest is read instead: a whole read costs about
#: as much as reading one entry in 20 of it again (measured: 125 entries, 25 changed, was slower one by one), a
#: handful of reads is always cheap, and past 50 the per-entry reads add up even beside 10,000 entries.
PATCH_MIN, PATCH_SHARE, PATCH_MAX = 5, 20, 50


#: The first page of a whole read: more rows than any terminal shows, and the most one page of ``list`` holds.
FIRST_PAGE = 100


def patch_limit(entries: int) -> int:
    return min(max(PATCH_MIN, entries // PATCH_SHARE), PATCH_MAX)


@dataclass(frozen=True)
class Manifest:
    """One revision's entries (active and retired: hiding the retired ones is the screen's), and the scope's head
    so screens know whether it is the present."""

    memory: MemoryRef | None
    entries: tuple[MemoryEntry, ...]
    head: int
    #: entry id → the revision that created it, for sorting in creation order (ties: entry id).
    created: dict[str, int] = field(default_factory=dict)
    #: False for the first page of a whole read (the rest follows): counts and orders cover only these entries.
    complete: bool = True

    @property
    def revision(self) -> int:
        return self.memory.revision if self.memory else 0  # 0: a scope with no memory yet

    @property
    def is_head(self) -> bool:
        return self.revision == self.head


class Manifests:
    """The last manifest read of each scope, and how to get another revision's from it."""

    def __init__(self) -> None:
        self._last: dict[str, Manifest] = {}
        self._lock = threading.Lock()

    def read(self, memory: Any, revision: int | None, first_page: Callable[[Manifest], None] | None = None) -> Manifest:
        """``memory`` (a scope's SyncScopedMemory) at ``revision`` (the head for ``None``). When it has to be read
        whole and holds more than a page, ``first_page`` gets the first page's (incomplete) manifest first."""
        head_ref: MemoryRef | None = memory.head()
        head = head_ref.revision if head_ref else 0
        target = head if revision is None else revision
        with self._lock:
            last = self._last.get(memory.scope)
        manifest = None
        if last is not None and head_ref is not None and last.memory is not None \
                and last.memory.artifact_id == head_ref.artifact_id and 1 <= target <= head:
            manifest = _patched(memory, last, head_ref, target)
        if manifest is None:
            manifest = _read_whole(memory, revision, head, first_page)
        with self._lock:
            self._last[memory.scope] = manifest
        return manifest


def _read_whole(memory: Any, revision: int | None, head: int,
                first_page: Callable[[Manifest], None] | None = None) -> Manifest:
    """The manifest read whole (after its first page, to ``first_page``, when there is more than a page). The
    creation revision of a revised entry is not in its version, so the changes are read too then."""
    if first_page is not None:
        page = memory.list(ListRequest(revision=revision, state="all", limit=FIRST_PAGE))
        if page.next_cursor is None:
            return _whole(memory, page.entries, page.memory, head)
        created = {e.entry.entry_id: e.entry.created_in_revision for e in page.entries}
        first_page(Manifest(memory=page.memory, entries=page.entries, head=max(head, page.memory.revision),
                            created=created, complete=False))
        revision = page.memory.revision  # the rest from the same revision, even if the head moved meanwhile
    page = memory.list(ListRequest(revision=revision, state="all"))
    return _whole(memory, page.entries, page.memory, head)


def _whole(memory: Any, entries: tuple[MemoryEntry, ...], at: MemoryRef | None, head: int) -> Manifest:
    shown = at.revision if at else 0
    created = {e.entry.entry_id: e.entry.created_in_revision for e in entries}
    if any(e.entry.version > 1 for e in entries) and at is not None:
        for change in memory.changes(0).changes:
            if change.operation == "remember" and change.revision <= shown:
                created[change.entry_id] = min(created.get(change.entry_id, change.revision), change.revision)
    return Manifest(memory=at, entries=entries, head=max(head, shown), created=created)


def _past_rewritten(memory: Any, since: int) -> bool:
    """Whether the revisions written after ``since`` may have changed the past: a forget erases an entry from every
    revision, including the one on screen (more changes than a page are not looked through: assumed so)."""
    page = memory.changes(since, limit=100)
    return page.next_cursor is not None or any(change.operation == "forget" for change in page.changes)


def _patched(memory: Any, last: Manifest, head_ref: MemoryRef, target: int) -> Manifest | None:
    """``last`` moved to ``target`` by rereading the entries changed between the two revisions; ``None`` when that
    is no cheaper than reading the whole manifest (or not safe: a forget rewrote the past)."""
    low, high = sorted((last.revision, target))
    at = head_ref.model_copy(update={"revision": target})
    if high < head_ref.revision != last.head and _past_rewritten(memory, last.head):
        return None
    if low == high:
        return replace(last, memory=at, head=head_ref.revision)
    page = memory.changes(low, limit=100)
    changes = [change for change in page.changes if change.revision <= high]
    if page.next_cursor is not None and len(changes) == len(page.changes):
        return None  # more changes than one page between the two: read whole
    changed = list(dict.fromkeys(change.entry_id for change in changes))
    if len(changed) > patch_limit(len(last.entries)) or any(change.operation == "forget" for change in changes):
        return None
    entries = {entry.entry.entry_id: entry for entry in last.entries}
    created = dict(last.created)
    for entry_id in changed:
        try:
            entries[entry_id] = memory.get_entry(entry_id, target)
        except EntryNotFoundError:  # created after ``target``: not in that revision
            entries.pop(entry_id, None)
    for change in changes:
        if change.operation == "remember":
            created[change.entry_id] = min(created.get(change.entry_id, change.revision), change.revision)
    return Manifest(memory=at, entries=tuple(entries.values()), head=head_ref.revision, created=created)
