"""Paging for ``list`` and ``changes``: opaque cursors pinned to the revision the first page read.

A cursor is base64url JSON naming the read (``list``/``changes``), the memory, the revision the pages are pinned to,
the listing's parameters and where the previous page stopped, with a checksum so an altered or foreign cursor is an
:class:`~pcmem.errors.InvalidCursorError`. Every revision stays readable, so a pinned cursor stays valid while the
scope moves on — except after an erasure (``forget``), which rewrites past revisions: a cursor issued before it is
a :class:`~pcmem.errors.StaleCursorError` (start again without a cursor). In the spirit of PowerContext's RFC 1656
``entries/query``: ``limit`` 1..100, ``next_cursor`` until the last page.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import TYPE_CHECKING, Any

from pcmem.errors import InputError, InvalidCursorError, RevisionNotFoundError, StaleCursorError
from pcmem.types.memory import MAX_PAGE_LIMIT, ChangesPage, EntryPage, ListRequest, MemoryRef
from pcmem.validation import validate_revision

if TYPE_CHECKING:
    from pcmem.memory.scoped import SyncScopedMemory


def encode(fields: dict[str, Any]) -> str:
    body = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    return base64.urlsafe_b64encode(f"{digest}:{body}".encode()).decode().rstrip("=")


def decode(cursor: str, kind: str, memory: MemoryRef | None) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        digest, body = raw.split(":", 1)
        fields = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise InvalidCursorError("not a pcmem cursor (pass back next_cursor exactly as returned)") from None
    if hashlib.sha256(body.encode()).hexdigest()[:16] != digest or not isinstance(fields, dict):
        raise InvalidCursorError("the cursor was altered (pass back next_cursor exactly as returned)")
    if fields.get("k") != kind:
        raise InvalidCursorError(f"this cursor continues a {fields.get('k')!r} read, not {kind!r}")
    if memory is None or fields.get("a") != memory.artifact_id:
        raise InvalidCursorError("this cursor belongs to another scope")
    return fields


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_LIMIT):
        raise InputError(f"limit must be an integer in 1..{MAX_PAGE_LIMIT}, got {limit!r}")


def _refuse_stale(scoped: SyncScopedMemory, memory: MemoryRef, pinned: int) -> None:
    if any(info.operation == "forget" and info.revision > pinned for info in scoped.revisions()):
        raise StaleCursorError(f"an entry of scope {scoped.scope!r} was forgotten after this cursor was issued "
                               f"(pinned to revision {pinned}); list again without a cursor")


def list_page(scoped: SyncScopedMemory, request: ListRequest) -> EntryPage:
    head = scoped.head()
    after = ""
    revision = request.revision
    if request.cursor is not None:
        fields = decode(request.cursor, "list", head)
        assert head is not None
        if fields.get("s") != request.state or (request.revision is not None and request.revision != fields["r"]):
            raise InvalidCursorError("this cursor continues a listing with other parameters (state or revision)")
        _refuse_stale(scoped, head, int(fields["h"]))
        revision, after = int(fields["r"]), str(fields["after"])
    memory = scoped._at(revision)
    if memory is None:
        return EntryPage(memory=None, entries=())
    entries = scoped._backend.manifest(memory, include_retired=request.state == "all")
    if after:
        entries = [entry for entry in entries if entry.entry.entry_id.encode() > after.encode()]
    if request.limit is None or len(entries) <= request.limit:
        return EntryPage(memory=memory, entries=tuple(entries))
    page = entries[: request.limit]
    cursor = encode({"k": "list", "a": memory.artifact_id, "r": memory.revision, "s": request.state,
                     "h": head.revision if head else 0, "after": page[-1].entry.entry_id})
    return EntryPage(memory=memory, entries=tuple(page), next_cursor=cursor)


def changes_page(scoped: SyncScopedMemory, since_revision: int, limit: int | None, cursor: str | None) -> ChangesPage:
    since = validate_revision(since_revision, "since_revision")
    _check_limit(limit)
    memory = scoped.head()
    after: tuple[int, str] = (0, "")
    if cursor is not None:
        fields = decode(cursor, "changes", memory)
        assert memory is not None
        if fields.get("since") != since:
            raise InvalidCursorError("this cursor continues a changes read with another since_revision")
        _refuse_stale(scoped, memory, int(fields["r"]))
        memory = memory.model_copy(update={"revision": int(fields["r"])})
        after = (int(fields["after_revision"]), str(fields["after_entry"]))
    head = 0 if memory is None else memory.revision
    if since > head:
        raise RevisionNotFoundError(f"since_revision {since} is past the head revision {head}")
    if memory is None:
        return ChangesPage(memory=None, since_revision=since, changes=())
    changes = scoped._backend.changes(memory, since)
    if after != (0, ""):
        changes = [c for c in changes if (c.revision, c.entry_id.encode()) > (after[0], after[1].encode())]
    if limit is None or len(changes) <= limit:
        return ChangesPage(memory=memory, since_revision=since, changes=tuple(changes))
    page = changes[:limit]
    next_cursor = encode({"k": "changes", "a": memory.artifact_id, "r": memory.revision, "since": since,
                          "after_revision": page[-1].revision, "after_entry": page[-1].entry_id})
    return ChangesPage(memory=memory, since_revision=since, changes=tuple(page), next_cursor=next_cursor)
