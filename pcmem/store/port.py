"""The storage backend port: what the Memory services need from an engine.

The services above this port own the semantics (validation, ids, versions, CAS, locking); a backend owns durable,
atomic storage of revisions and the derived projections used for search. The DuckDB file is the default
implementation (:mod:`pcmem.store.duckdb`); a distributed engine can implement the same protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pcmem.memory.models import (
    Change,
    EntryState,
    EntryVersion,
    HistoryEvent,
    MemoryEntry,
    MemoryRef,
    Operation,
    RevisionInfo,
    ScopeSummary,
)


@dataclass(frozen=True, slots=True)
class EntryEvent:
    """What one revision did to one entry: the version it points at from now on, and the state."""

    entry_id: str
    entry_version_id: str
    state: EntryState


@dataclass(frozen=True, slots=True)
class HeadEntry:
    """An entry's standing at the head of its scope."""

    version: EntryVersion
    state: EntryState


class WriteTransaction(Protocol):
    """One atomic write to one scope. Opened by :meth:`StorageBackend.write`; nothing is visible until commit."""

    @property
    def memory(self) -> MemoryRef | None:
        """The scope's head when the transaction began, or ``None`` when the scope has no memory yet."""

    def head_entry(self, entry_id: str) -> HeadEntry | None:
        """The entry's current version and state, or ``None`` when the entry id is unknown in this scope."""

    def existing_entry_ids(self, entry_ids: Sequence[str]) -> set[str]:
        """The subset of ``entry_ids`` already used in this scope (active or retired)."""

    def commit(
        self,
        operation: Operation,
        new_versions: Sequence[EntryVersion],
        events: Sequence[EntryEvent],
        now: datetime,
    ) -> MemoryRef:
        """Write revision head+1 with these new versions and entry events; return the new head.

        Cost is O(len(events)): unchanged entries' rows are not touched. Raises StoreError on engine failure,
        in which case nothing is written.
        """


class StorageBackend(Protocol):
    """Durable storage of scoped memories. Reads never block on writes; each read sees one consistent revision."""

    def write(self, scope: str) -> AbstractContextManager[WriteTransaction]:
        """Begin an exclusive write to ``scope``; an exception inside the block rolls everything back."""

    def find_memory(self, scope: str) -> MemoryRef | None:
        """The scope's head, or ``None`` when nothing was ever remembered in it."""

    def scope_summaries(self) -> list[ScopeSummary]:
        """Every scope with entry counts at its head, ordered by scope."""

    def revisions(self, memory: MemoryRef) -> list[RevisionInfo]:
        """Every revision of the memory up to ``memory.revision``, oldest first."""

    def manifest(self, memory: MemoryRef, *, include_retired: bool) -> list[MemoryEntry]:
        """The exact entries of revision ``memory.revision``, ordered by entry id."""

    def entry_in_revision(self, memory: MemoryRef, entry_id: str) -> MemoryEntry | None:
        """The entry as it stood in revision ``memory.revision``, or ``None`` if it did not exist yet."""

    def entry_version(self, artifact_id: str, entry_version_id: str) -> EntryVersion | None:
        """One immutable entry version by id."""

    def changes(self, memory: MemoryRef, since_revision: int) -> list[Change]:
        """Entry events in revisions since_revision+1 .. memory.revision, in order."""

    def history(self, memory: MemoryRef, entry_id: str) -> list[HistoryEvent]:
        """Every event of one entry up to ``memory.revision``, oldest first."""

    def close(self) -> None:
        """Release the engine; further calls raise StoreError."""
