"""Request and response models of the Memory API, as immutable pydantic models.

Requests validate and normalise their own fields, so a request that exists is a request pcmem accepts; building one
from bad input raises :class:`~pcmem.errors.InputError`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from pcmem.errors import InputError
from pcmem.types.base import (
    Count,
    EntryId,
    EntryText,
    Flag,
    Frozen,
    Kind,
    Metadata,
    Reason,
    Request,
    Revision,
    String,
    Timestamp,
)

#: "erased": the entry was forgotten (:meth:`~pcmem.memory.scoped.SyncScopedMemory.forget`); only its ids remain.
EntryState = Literal["active", "retired", "erased"]
Operation = Literal["remember", "revise", "retire", "reactivate", "forget"]

MAX_ENTRIES_PER_WRITE = 100_000
MAX_PAGE_LIMIT = 100  # a page holds 1..100 items (PowerContext's entries query allows no more)


# --- identity ---------------------------------------------------------------------------------------------------


class Citation(Frozen):
    """The exact identity of one entry version as read from one revision of one Memory."""

    artifact_id: String
    revision: Revision
    entry_id: String
    entry_version_id: String

    def __str__(self) -> str:
        return f"{self.artifact_id}@{self.revision}/{self.entry_id}/{self.entry_version_id}"

    @classmethod
    def of(cls, memory: MemoryRef, version: EntryVersion) -> Citation:
        """The citation of ``version`` as read from revision ``memory.revision`` of ``memory``."""
        return cls(artifact_id=memory.artifact_id, revision=memory.revision, entry_id=version.entry_id,
                   entry_version_id=version.entry_version_id)

    @classmethod
    def parse(cls, text: str) -> Citation:
        """Parse the ``artifact@revision/entry/version`` form that ``str(citation)`` prints."""
        try:
            # Generated artifact and version ids never contain '/' or '@'; entry ids may, so split around them.
            head, rest = text.strip().split("/", 1)
            entry_id, version_id = rest.rsplit("/", 1)
            artifact_id, revision = head.split("@", 1)
            if not entry_id:
                raise ValueError("empty entry id")
            return cls(artifact_id=artifact_id, revision=int(revision), entry_id=entry_id, entry_version_id=version_id)
        except (ValueError, ValidationError):
            raise InputError(f"not a citation: {text!r} (expected artifact@revision/entry_id/entry_version_id)") from None


class MemoryRef(Frozen):
    """One Memory (the artifact a scope owns) at one revision."""

    scope: str
    artifact_id: str
    revision: int


class EntryVersion(Frozen):
    """One immutable version of an entry."""

    entry_id: str
    entry_version_id: str
    version: int
    kind: str
    text: str
    content_hash: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_in_revision: int
    created_at: datetime


class MemoryEntry(Frozen):
    """An entry as it stands in one revision: its version there, its state, and the citation to read it back."""

    citation: Citation
    state: EntryState
    entry: EntryVersion


class Tombstone(Frozen):
    """What remains of a forgotten entry: its ids and the revision that erased it (no text, kind or metadata)."""

    entry_id: str
    entry_version_ids: tuple[str, ...]
    erased_in_revision: int
    erased_at: datetime


class RevisionInfo(Frozen):
    revision: int
    operation: Operation
    created_at: datetime
    change_count: int
    #: Why the write was made, as its request gave it (``reason``), or ``None``.
    reason: str | None = None


class ScopeSummary(Frozen):
    scope: str
    artifact_id: str
    head_revision: int
    active_count: int
    retired_count: int
    updated_at: datetime


# --- writes -----------------------------------------------------------------------------------------------------


class NewEntry(Request):
    """One entry to remember. ``entry_id`` is generated when omitted. ``created_at`` (optional; naive datetimes are
    UTC) keeps an imported entry's own date instead of the time of the write; an upsert that finds the same text,
    kind and metadata writes nothing, whatever the date (``pcmem import --upsert`` run twice changes nothing)."""

    text: EntryText
    kind: Kind = "fact"
    metadata: Metadata = Field(default_factory=dict)
    entry_id: EntryId | None = None
    created_at: Timestamp | None = None

    @field_validator("created_at", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else (value.replace(tzinfo=UTC) if value.tzinfo is None else value)


class RememberRequest(Request):
    """Add entries in one new revision. ``expected_revision`` (0 for a new scope) makes the write compare-and-swap.

    ``upsert=True`` makes the write idempotent by key: an entry whose ``entry_id`` already exists gets a new version
    when its text, kind or metadata differ (canonical JSON, types included) and is reported unchanged otherwise
    (a retired one is made active again); an unknown id is created. Without ``upsert`` an existing id is an
    :class:`~pcmem.errors.InputError`. A forgotten key is written as a new entry with a new id
    (:mod:`pcmem.memory.keys`).

    With a write gate configured, entries an existing entry already states are reported as duplicates and not
    added, unless ``allow_duplicates`` is true (upserts with an ``entry_id`` skip the gate: the key decides).
    """

    entries: tuple[NewEntry, ...] = Field(min_length=1, max_length=MAX_ENTRIES_PER_WRITE)
    expected_revision: Revision | None = None
    allow_duplicates: Flag = False
    upsert: Flag = False
    #: Why the write is made (kept with the revision, shown by ``changes``); at most 512 characters.
    reason: Reason = None

    @model_validator(mode="after")
    def _unique_ids(self) -> RememberRequest:
        ids = [entry.entry_id for entry in self.entries if entry.entry_id is not None]
        if len(ids) != len(set(ids)):
            raise ValueError("entry_id values must be unique within one request")
        return self


class _HeadWrite(Request):
    """A write that changes one existing entry, decided on what the caller read: compare-and-swap.

    Give ``expected_revision`` (the scope's head revision the caller read: any other write to the scope
    conflicts) or ``expected_version`` (the entry's logical ``version`` the caller read: only a write to *this*
    entry conflicts, so writers of different entries of one scope never collide), or both.
    """

    entry_id: EntryId
    expected_revision: Revision | None = None
    expected_version: Revision | None = None
    #: Why the write is made (kept with the revision, shown by ``changes``); at most 512 characters.
    reason: Reason = None

    @field_validator("expected_version")
    @classmethod
    def _expected_version(cls, value: int | None) -> int | None:
        if value == 0:
            raise InputError("expected_version must be ≥ 1 (entry versions start at 1)")
        return value

    @model_validator(mode="after")
    def _some_expectation(self) -> _HeadWrite:
        if self.expected_revision is None and self.expected_version is None:
            raise InputError("give expected_revision (the scope head you read) or expected_version (the entry's "
                             "version you read): revise, retire and reactivate are compare-and-swap")
        return self


class ReviseRequest(_HeadWrite):
    """A new version of an active entry. ``kind``/``metadata`` left as ``None`` keep the current values."""

    text: EntryText
    kind: Kind | None = None
    metadata: Metadata | None = None


class RetireRequest(_HeadWrite):
    """Deactivate an entry. Nothing is deleted: past revisions still list it."""


class ReactivateRequest(_HeadWrite):
    """Make a retired entry active again, at the version it had when retired."""


class Duplicate(Frozen):
    """A new entry the write gate found already stated by an existing one (so it was not added)."""

    index: int  # position in the request's entries
    text: str
    existing: Citation


class WriteResult(Frozen):
    """The revision a write created and the citations of the entry versions it touched, in request order.

    When the write gate skipped every entry, no revision was written and ``memory`` is the unchanged head.
    ``unchanged`` is true when a revise asked for exactly what the entry already holds (text, kind and metadata
    compared as canonical JSON, types included): nothing was written and the citation is the current version.
    """

    memory: MemoryRef
    citations: tuple[Citation, ...]
    duplicates: tuple[Duplicate, ...] = ()
    unchanged: bool = False
    #: Entries the write left as they were (an upsert or a revise that asked for what the entry already holds, a
    #: forget of an entry already erased); their citations are in ``citations`` too.
    unchanged_entry_ids: tuple[str, ...] = ()
    #: The cited entries as the write left them, in the order of ``citations`` (its version, its state): what a caller
    #: shows of its write without reading it back. Empty for a forget, and in the outcome a resent idempotency key
    #: is answered with (a record keeps no text): read those by citation.
    entries: tuple[MemoryEntry, ...] = ()


# --- reads ------------------------------------------------------------------------------------------------------


class ListRequest(Request):
    """List a revision's manifest: the head unless ``revision`` is given; ``state="all"`` includes retired entries.

    ``limit`` (1..100) pages the listing; pass the page's ``next_cursor`` as ``cursor`` (with the same ``state``)
    for the next page. Pages after the first read the revision the first one read, however the scope moved since.
    """

    state: Literal["active", "all"] = "active"
    revision: Revision | None = None
    limit: Count | None = Field(default=None, ge=1, le=MAX_PAGE_LIMIT)
    cursor: String | None = None


class _OneEntry(Request):
    """A read or erasure of one entry by its id (or key: see :mod:`pcmem.memory.keys`)."""

    entry_id: EntryId


class EntryRequest(_OneEntry):
    """``get_entry``: the entry as it stands at the head, or at ``revision``."""

    revision: Revision | None = None


class HistoryRequest(_OneEntry):
    """``history``: every revision that changed the entry."""


class ForgetRequest(_OneEntry):
    """``forget``: erase the entry for good (every version's text, metadata and vectors)."""


class ChangesRequest(Request):
    """``changes``: every entry change after ``since_revision``; ``limit`` (1..100) pages them, ``cursor`` (a page's
    ``next_cursor``, with the same ``since_revision``) continues."""

    since_revision: Revision = 0
    limit: Count | None = Field(default=None, ge=1, le=MAX_PAGE_LIMIT)
    cursor: String | None = None


class EntryPage(Frozen):
    """A manifest (or one page of it). ``memory`` is ``None`` for a scope with no memory; ``next_cursor`` is set
    when more entries follow."""

    memory: MemoryRef | None
    entries: tuple[MemoryEntry, ...]
    next_cursor: str | None = None


class Change(Frozen):
    """One entry changed in one revision."""

    revision: int
    operation: Operation
    entry_id: str
    entry_version_id: str
    state: EntryState
    #: The reason the revision's write gave, or ``None``.
    reason: str | None = None


class ChangesPage(Frozen):
    """Changes after ``since_revision`` (or one page of them). ``memory`` is ``None`` for a scope with no memory;
    ``next_cursor`` is set when more changes follow."""

    memory: MemoryRef | None
    since_revision: int
    changes: tuple[Change, ...]
    next_cursor: str | None = None


class HistoryEvent(Frozen):
    revision: int
    operation: Operation
    state: EntryState
    entry: EntryVersion
    created_at: datetime
    #: The reason the revision's write gave, or ``None``.
    reason: str | None = None


class EntryHistory(Frozen):
    memory: MemoryRef
    entry_id: str
    events: tuple[HistoryEvent, ...]
