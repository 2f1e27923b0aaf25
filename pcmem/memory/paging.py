"""Paging for ``list`` and ``changes``: opaque cursors pinned to the revision the first page read.

A cursor is base64url of an HMAC-SHA256 tag (16 bytes) and JSON naming the read (``list``/``changes``), the revision
the pages are pinned to, the listing's parameters and where the previous page stopped. The tag is keyed with the
store's own secret (:meth:`~pcmem.store.port.RevisionLog.paging_secret`) and covers the memory the cursor belongs
to, so a client cannot edit a cursor and sign it again, nor carry one to another scope. Whatever a caller passes as a
cursor, the answer is a page or an :class:`~pcmem.errors.InvalidCursorError` (an InputError): one that does not
decode, fails the tag, has another shape, or points past the scope's head revision (a store restored from an older
copy) gets :data:`NOT_VALID`. Every revision stays readable, so a pinned cursor stays valid while the scope moves
on — except after an erasure (``forget``), which rewrites past revisions: a cursor issued before it is a
:class:`~pcmem.errors.StaleCursorError` (start again without a cursor). In the spirit of PowerContext's entries query
``entries/query``: ``limit`` 1..100, ``next_cursor`` until the last page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pcmem.errors import InputError, InvalidCursorError, RevisionNotFoundError, StaleCursorError
from pcmem.types.memory import MAX_PAGE_LIMIT, ChangesPage, EntryPage, ListRequest, MemoryRef
from pcmem.validation import validate_revision

if TYPE_CHECKING:
    from pcmem.store.port import RevisionLog

NOT_VALID = "this cursor is not valid for this scope; start again without a cursor"
TAG_BYTES = 16
MAX_CURSOR_CHARS = 4096  # a real cursor is ~250 characters; anything far longer is not one

#: The fields each kind of cursor carries, with their types (ints are revisions, never negative).
_SHAPES: dict[str, dict[str, type]] = {
    "list": {"k": str, "r": int, "h": int, "s": str, "after": str},
    "changes": {"k": str, "r": int, "since": int, "after_revision": int, "after_entry": str},
}


def _tag(secret: bytes, artifact_id: str, body: bytes) -> bytes:
    message = artifact_id.encode() + b"\0" + body
    return hmac.new(secret, message, hashlib.sha256).digest()[:TAG_BYTES]


def encode(secret: bytes, memory: MemoryRef, fields: dict[str, Any]) -> str:
    """A cursor for ``fields`` that only this store, and only ``memory``'s scope, will accept."""
    body = json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(_tag(secret, memory.artifact_id, body) + body).decode().rstrip("=")


def decode(secret: bytes, cursor: object, kind: str, memory: MemoryRef | None) -> dict[str, Any]:
    """The fields of a cursor this store issued for ``memory`` and a ``kind`` read; anything else is
    InvalidCursorError. The fields are checked against the head too: no revision past ``memory.revision``."""
    if not isinstance(cursor, str) or memory is None or not 0 < len(cursor) <= MAX_CURSOR_CHARS:
        raise InvalidCursorError(NOT_VALID)
    try:
        raw = base64.b64decode((cursor + "=" * (-len(cursor) % 4)).encode("ascii"), altchars=b"-_", validate=True)
    except (ValueError, binascii.Error):  # UnicodeEncodeError is a ValueError
        raise InvalidCursorError(NOT_VALID) from None
    tag, body = raw[:TAG_BYTES], raw[TAG_BYTES:]
    if not hmac.compare_digest(tag, _tag(secret, memory.artifact_id, body)):
        raise InvalidCursorError(NOT_VALID)
    try:
        fields = json.loads(body)
    except ValueError:
        raise InvalidCursorError(NOT_VALID) from None
    read = fields.get("k") if isinstance(fields, dict) else None
    shape = _SHAPES.get(read) if isinstance(read, str) else None
    if shape is None or not _has_shape(fields, shape, memory.revision):
        raise InvalidCursorError(NOT_VALID)
    if fields["k"] != kind:
        raise InvalidCursorError(f"this cursor continues a {fields['k']!r} read, not {kind!r}")
    return fields


def _has_shape(fields: dict[str, Any], shape: dict[str, type], head: int) -> bool:
    """Exactly the fields of ``shape``, of its types, and every revision in 0..head."""
    if fields.keys() != shape.keys():
        return False
    for name, kind in shape.items():
        value = fields[name]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= head):
            return False
        if kind is str and not isinstance(value, str):
            return False
    return True


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_LIMIT):
        raise InputError(f"limit must be an integer in 1..{MAX_PAGE_LIMIT}, got {limit!r}")


def _refuse_stale(backend: RevisionLog, scope: str, memory: MemoryRef, pinned: int) -> None:
    # only the revisions made since the cursor was issued: a page of a long-lived scope must not read its whole log
    if any(info.operation == "forget" for info in backend.revisions(memory, since=pinned)):
        raise StaleCursorError(f"an entry of scope {scope!r} was forgotten after this cursor was issued "
                               f"(pinned to revision {pinned}); list again without a cursor")


def list_page(backend: RevisionLog, scope: str, request: ListRequest,
              at: Callable[[int | None], MemoryRef | None]) -> EntryPage:
    """A page of ``scope``'s manifest; ``at`` gives the scope's memory at a revision (the head for None)."""
    head = backend.find_memory(scope)
    after = ""
    revision = request.revision
    if request.cursor is not None:
        fields = decode(backend.paging_secret(), request.cursor, "list", head)
        assert head is not None
        if fields["s"] != request.state or (request.revision is not None and request.revision != fields["r"]):
            raise InvalidCursorError("this cursor continues a listing with other parameters (state or revision)")
        if not 1 <= fields["r"] <= fields["h"]:
            raise InvalidCursorError(NOT_VALID)
        _refuse_stale(backend, scope, head, fields["h"])
        revision, after = fields["r"], fields["after"]
    memory = at(revision)
    if memory is None:
        return EntryPage(memory=None, entries=())
    # one entry past the page says whether another page follows, without reading the rest of the manifest
    read_limit = None if request.limit is None else request.limit + 1
    entries = backend.manifest(memory, include_retired=request.state == "all", after=after, limit=read_limit)
    if request.limit is None or len(entries) <= request.limit:
        return EntryPage(memory=memory, entries=tuple(entries))
    page = entries[: request.limit]
    fields = {"k": "list", "r": memory.revision, "s": request.state, "h": head.revision if head else 0,
              "after": page[-1].entry.entry_id}
    cursor = encode(backend.paging_secret(), memory, fields)
    return EntryPage(memory=memory, entries=tuple(page), next_cursor=cursor)


def changes_page(backend: RevisionLog, scope: str, since_revision: int, limit: int | None,
                 cursor: str | None) -> ChangesPage:
    since = validate_revision(since_revision, "since_revision")
    _check_limit(limit)
    memory = backend.find_memory(scope)
    after: tuple[int, str] = (0, "")
    if cursor is not None:
        fields = decode(backend.paging_secret(), cursor, "changes", memory)
        assert memory is not None
        if fields["since"] != since:
            raise InvalidCursorError("this cursor continues a changes read with another since_revision")
        if not since <= fields["after_revision"] <= fields["r"]:
            raise InvalidCursorError(NOT_VALID)
        _refuse_stale(backend, scope, memory, fields["r"])
        memory = memory.model_copy(update={"revision": fields["r"]})
        after = (fields["after_revision"], fields["after_entry"])
    head = 0 if memory is None else memory.revision
    if since > head:
        raise RevisionNotFoundError(f"since_revision {since} is past the head revision {head}")
    if memory is None:
        return ChangesPage(memory=None, since_revision=since, changes=())
    # a continued read starts at the revision it stopped in, not at ``since``: a page costs its rest, not every change
    changes = backend.changes(memory, since if after == (0, "") else max(since, after[0] - 1))
    if after != (0, ""):
        changes = [c for c in changes if (c.revision, c.entry_id.encode()) > (after[0], after[1].encode())]
    if limit is None or len(changes) <= limit:
        return ChangesPage(memory=memory, since_revision=since, changes=tuple(changes))
    page = changes[:limit]
    fields = {"k": "changes", "r": memory.revision, "since": since, "after_revision": page[-1].revision,
              "after_entry": page[-1].entry_id}
    next_cursor = encode(backend.paging_secret(), memory, fields)
    return ChangesPage(memory=memory, since_revision=since, changes=tuple(page), next_cursor=next_cursor)
