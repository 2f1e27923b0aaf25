"""The storage backend port: what the Memory services need from an engine.

The services above this port own the semantics (validation, ids, versions, CAS, locking); a backend owns durable,
atomic storage of revisions and the derived projections used for search. The DuckDB file is the default
implementation (:mod:`pcmem.store.duckdb`); OceanBase seekdb (:mod:`pcmem.store.seekdb`) implements the same
protocol on a distributed engine, and ``tests/store/test_backend_contract.py`` holds both to it. What every backend
shares (row mapping, revision choice, commit checks, the completeness memo) is written once in
:mod:`pcmem.store.common`; the values crossing this port live in :mod:`pcmem.types.storage`.

The port is a composition of roles along the seams its methods already had, so each consumer names only what it
uses: :class:`RevisionLog` (the Memory services, paging), :class:`VectorReads` (search, the embedder choice),
:class:`VectorProfiles` (reindex, embedder switches), :class:`SearchIndex` (search), :class:`Maintenance` (forget's
reclaim), :class:`StoreSettings` (the search defaults a store keeps, read by search and set by the Memory service);
:class:`FileMaintenance` is what only a store file offers (check, repair). ``tests/store/test_storage_roles.py``
holds both engines to every role.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from pcmem.analysis import Analyzer
from pcmem.settings import SearchFusion
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import (
    Change,
    EntryVersion,
    HistoryEvent,
    MemoryEntry,
    MemoryRef,
    Operation,
    RevisionInfo,
    ScopeSummary,
    Tombstone,
)
from pcmem.types.storage import ChannelCandidates, CheckReport, EntryEvent, HeadEntry, VectorStatus, WriteRecord

if TYPE_CHECKING:
    import numpy as np


class WriteTransaction(Protocol):
    """One atomic write to one scope. Opened by :meth:`StorageBackend.write`; nothing is visible until commit."""

    @property
    def memory(self) -> MemoryRef | None:
        """The scope's head when the transaction began, or ``None`` when the scope has no memory yet."""

    def head_entry(self, entry_id: str) -> HeadEntry | None:
        """The entry's current version and state, or ``None`` when the entry id is unknown in this scope."""

    def existing_entry_ids(self, entry_ids: Sequence[str]) -> set[str]:
        """The subset of ``entry_ids`` already used in this scope (active or retired)."""

    def embedding_profile(self) -> EmbeddingProfile | None:
        """The store's active embedding profile as this transaction sees it (a write decides its vectors against
        it: another runtime or process may have switched embedders since the vectors were computed)."""

    def missing_vectors(self, entry_version_ids: Sequence[str]) -> set[str]:
        """The subset of ``entry_version_ids`` that has no vector for the store's profile."""

    def secondary_embedding_profile(self) -> EmbeddingProfile | None:
        """The store's secondary profile as this transaction sees it (see
        :meth:`StorageBackend.set_secondary_embedding_profile`), or ``None``."""

    def store_secondary_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        """Store vectors computed under ``profile`` with this transaction (dropped unless it is the secondary
        profile): they commit, or roll back, with the entries."""

    def recorded_write(self, key: str) -> WriteRecord | None:
        """The write recorded under idempotency ``key`` (by any process, in any scope), as this transaction sees it, or
        ``None`` (never recorded, or no longer kept: see :data:`pcmem.store.common.RECORDS_KEPT_FOR`)."""

    def record_write(self, record: WriteRecord) -> None:
        """Keep ``record`` with this transaction (it commits, or rolls back, with the write it records); records past
        their keeping time may go in the same transaction. A key already recorded raises StoreError and nothing of
        the transaction stays: :meth:`recorded_write` is looked at first."""

    def erase(self, entry_ids: Sequence[str]) -> None:
        """After :meth:`commit` recorded their ``erased`` events: delete the text, metadata and vectors of every
        version these entries ever had (the event log keeps their ids). Raises StoreError."""

    def commit(
        self,
        operation: Operation,
        new_versions: Sequence[EntryVersion],
        events: Sequence[EntryEvent],
        now: datetime,
        vectors_by_version: Mapping[str, np.ndarray] | None = None,
        artifact_id: str | None = None,
        reason: str | None = None,
    ) -> MemoryRef:
        """Write revision head+1 with these new versions, entry events and (optional) active-profile vectors.

        ``reason`` (why the write was made, as its request gave it) is kept with the revision: :meth:`revisions`
        and :meth:`changes` answer it.

        Returns the new head. ``artifact_id`` names the memory a first write creates (``pcmem migrate`` keeps the
        source's ids so citations stay valid; normally a new id is generated); naming another memory than the
        scope's existing one raises StoreError.

        The search projections move in the same transaction, so the next search sees exactly this revision. Cost is
        O(len(events)): unchanged entries' rows are not touched. Raises StoreError on engine failure, in which case
        nothing is written.

        A new version numbered 1 starts its entry: the scope holds nothing of that entry before this commit (the
        memory layer numbers a version 1 only for an id it found nowhere; ``pcmem migrate`` copies each version in
        the revision that created it), so an engine need not look its head up.
        """


T = TypeVar("T")


@runtime_checkable
class GroupedWrites(Protocol):
    """A backend that commits the writes of several threads together (DuckDB: :mod:`pcmem.store.duckdb.write_groups`).
    The Memory services hand it each write as a callable instead of opening :meth:`RevisionLog.write` themselves."""

    def write_grouped(self, scope: str, body: Callable[[WriteTransaction], T]) -> T:
        """Run ``body`` in a write transaction of ``scope`` (possibly shared with other threads' writes, each on
        the state the earlier ones left) and return its result once that transaction committed, or raise its own
        error (nothing of it stays). Serialised with every other write of the backend: no scope lock is needed."""


@runtime_checkable
class Snapshots(Protocol):
    """Consistent reads: every read a thread makes inside :meth:`reading` sees one revision of the store."""

    def reading(self) -> AbstractContextManager[None]:
        """One read snapshot for every read this thread makes inside the block (nested reads join it).

        May raise :class:`SnapshotMoved` from a read inside the block: the caller runs the block again, and the
        next ``reading()`` of the thread is a plain snapshot, which never raises it."""


@runtime_checkable
class RevisionLog(Snapshots, Protocol):
    """The insert-only log of revisions per scope: atomic writes, and exact reads of any past revision (the Memory
    services and paging read it; ``pcmem migrate`` copies it)."""

    def write(self, scope: str) -> AbstractContextManager[WriteTransaction]:
        """Begin an exclusive write to ``scope``; an exception inside the block rolls everything back."""

    def find_memory(self, scope: str) -> MemoryRef | None:
        """The scope's head, or ``None`` when nothing was ever remembered in it."""

    def scope_summaries(self) -> list[ScopeSummary]:
        """Every scope with entry counts at its head, ordered by scope."""

    def revisions(self, memory: MemoryRef, *, since: int = 0) -> list[RevisionInfo]:
        """The revisions of the memory after ``since`` up to ``memory.revision``, oldest first (all for 0). A
        cursor's staleness check asks only for the revisions made since it was issued."""

    def manifest(self, memory: MemoryRef, *, include_retired: bool, after: str = "",
                 limit: int | None = None) -> list[MemoryEntry]:
        """The exact entries of revision ``memory.revision``, ordered by entry id (compared as UTF-8 bytes): only
        those whose id sorts after ``after``, and at most ``limit`` of them (all for ``None``). A page of a listing
        reads its page only, not the whole manifest."""

    def entry_in_revision(self, memory: MemoryRef, entry_id: str) -> MemoryEntry | None:
        """The entry as it stood in revision ``memory.revision``, or ``None`` if it did not exist yet."""

    def changes(self, memory: MemoryRef, since_revision: int) -> list[Change]:
        """Entry events in revisions since_revision+1 .. memory.revision, in order."""

    def history(self, memory: MemoryRef, entry_id: str) -> list[HistoryEvent]:
        """Every event of one entry up to ``memory.revision``, oldest first (none for an erased entry)."""

    def tombstone(self, memory: MemoryRef, entry_id: str) -> Tombstone | None:
        """The tombstone of an erased entry of this memory (its ids, the revision that erased it), or ``None``."""

    def entry_versions(self, entry_version_ids: Sequence[str]) -> dict[str, EntryVersion]:
        """Immutable versions by id (missing ids are absent from the result)."""

    def paging_secret(self) -> bytes:
        """The key paging cursors are signed with (HMAC): random, made once per store and kept in it (see
        :class:`pcmem.store.common.PagingSecret`), so only a holder of the store can make a cursor it accepts."""


@runtime_checkable
class VectorReads(Protocol):
    """Which vector spaces the store keeps, and the vectors in them (what a search and its reranker read)."""

    def embedding_profile(self) -> EmbeddingProfile | None:
        """The active profile: the vector space searches use, or ``None`` before any embedder was used."""

    def secondary_embedding_profile(self) -> EmbeddingProfile | None:
        """The secondary profile: a second embedder's vectors kept for the embedding reranker only, or ``None``."""

    def stored_vectors(self, profile: EmbeddingProfile, entry_version_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors stored under ``profile`` (active, pending or secondary) for these versions; missing ids are
        absent."""


@runtime_checkable
class VectorProfiles(VectorReads, Protocol):
    """Filling and switching the store's vector spaces (reindex, an embedder switch, the secondary profile)."""

    def set_embedding_profile(self, profile: EmbeddingProfile) -> None:
        """Adopt ``profile`` as the active profile of a store that has none yet (a no-op when it already is it).

        Raises StoreError when the store already has a different active profile: switching goes through
        :meth:`begin_embedding_switch` / :meth:`commit_embedding_switch` so a usable vector channel is never lost.
        """

    def pending_embedding_profile(self) -> EmbeddingProfile | None:
        """The profile a switch in progress is embedding into, or ``None``."""

    def begin_embedding_switch(self, profile: EmbeddingProfile) -> None:
        """Start (or resume) embedding every active head version under ``profile`` next to the active vectors.

        Idempotent for the same profile (its stored vectors are kept: that is how a switch resumes); a different
        pending profile is abandoned and its vectors dropped. The active profile and its vectors are untouched.
        """

    def commit_embedding_switch(self, profile: EmbeddingProfile) -> bool:
        """Atomically make the pending ``profile`` active and drop the previous profile's vectors.

        Returns False and changes nothing when some active head version still lacks a ``profile`` vector (a write
        landed meanwhile: embed the rest and call again). Raises StoreError when ``profile`` is not pending.
        """

    def set_secondary_embedding_profile(self, profile: EmbeddingProfile | None) -> None:
        """Keep ``profile``'s vectors as the secondary profile (no-op when it already is; another secondary profile
        and its vectors are dropped); ``None`` drops it. Filled by writes of a runtime whose rerank embedder has this
        profile and by :meth:`store_vectors`. Raises StoreError for the active profile, CapabilityNotSupportedError
        on a backend without secondary profiles."""

    def versions_missing_vectors(self, profile: EmbeddingProfile, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (entry_version_id, text) pairs of active head versions lacking a ``profile`` vector.

        ``profile`` is the active, pending or secondary profile; any other raises StoreError. Ordered by
        entry_version_id.
        """

    def count_missing_vectors(self, profile: EmbeddingProfile) -> int:
        """How many active head versions lack a ``profile`` vector (active, pending or secondary profile)."""

    def store_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        """Store vectors computed under ``profile`` (silently dropped unless it is the active, pending or secondary
        profile)."""


@runtime_checkable
class SearchIndex(Snapshots, Protocol):
    """The search projections: both channels' candidates from one head snapshot, analysed as the index was built."""

    #: The text analyzer the store's full-text index was built with; queries must be analysed the same way.
    analyzer: Analyzer

    def candidates(
        self, scope: str, *, fts_terms: Sequence[str] | None, query_vector: np.ndarray | None, limit: int,
        with_versions: bool = True,
    ) -> ChannelCandidates:
        """Up to ``limit`` candidates per requested channel (None = channel not run) from one head snapshot.

        FTS: BM25 over active head versions, with distinct matched query terms. Vector: cosine similarity.
        Each list is ordered best first, ties bytewise by (artifact_id, entry_id, entry_version_id).
        ``with_versions=False`` leaves ``versions`` empty: the caller reads the few it needs (a page's hits) with
        :meth:`~RevisionLog.entry_versions` inside the same :meth:`reading` block, from the same snapshot.
        """

    def vector_status(self, scope: str) -> VectorStatus:
        """The scope's head, the store's profile and vector completeness, in one snapshot."""

    def warm(self, scope: str, *, vectors: bool = True) -> bool:
        """Read now what the scope's first search would read before ranking anything (DuckDB: its full-text view and,
        with ``vectors``, its vector view, at its head); ``False`` when the scope has no memory. An engine that keeps
        nothing in memory for searches does nothing. Raises StoreError."""


#: True while the caller searches once and exits (see :func:`searching_once`); per context, so a CLI command's flag
#: never reaches the threads its process serves other processes on, nor the next test of a test run.
_SEARCHING_ONCE: ContextVar[bool] = ContextVar("pcmem_searching_once", default=False)


@contextmanager
def searching_once() -> Iterator[None]:
    """Inside the block, the caller's searches are the only ones its process makes (a ``pcmem search`` call): a
    backend answers them straight from its store instead of building in-process views that only a later search
    would repay (DuckDB: :mod:`pcmem.store.duckdb.fts_direct`, no numpy). Results are the same either way."""
    token = _SEARCHING_ONCE.set(True)
    try:
        yield
    finally:
        _SEARCHING_ONCE.reset(token)


def is_searching_once() -> bool:
    """Whether the caller is inside :func:`searching_once`."""
    return _SEARCHING_ONCE.get()


@runtime_checkable
class Maintenance(Protocol):
    """The engine's own upkeep of its storage (what ``forget`` asks of it after erasing)."""

    def reclaim(self) -> None:
        """Make erased bytes unrecoverable from the store's files (DuckDB: checkpoint, rewrite, overwrite freed
        space); a no-op where the engine manages its own storage. Raises StoreError."""


@runtime_checkable
class StoreSettings(Protocol):
    """Defaults the store keeps for every process that opens it (in the store itself: they travel with the file)."""

    def search_fusion_default(self) -> SearchFusion | None:
        """How a search fuses its channels when neither the request nor the runtime says, or ``None`` (the contract's
        rrf). Raises StoreFormatError when the store names a fusion this pcmem does not know."""

    def set_search_fusion_default(self, fusion: SearchFusion | None) -> None:
        """Keep ``fusion`` as the store's default (``None`` removes it). Raises StoreReadOnlyError, StoreError."""


@runtime_checkable
class StorageBackend(RevisionLog, VectorProfiles, SearchIndex, Maintenance, StoreSettings, Protocol):
    """Durable storage of scoped memories: every role above, as each engine implements them. Reads never block on
    writes; each read sees one consistent revision. Consumers are typed against the narrowest role they use; only
    the composition root, which opens and hands out a store, holds the whole of it, and closes it."""

    def close(self) -> None:
        """Release the engine; further calls raise StoreError."""


@runtime_checkable
class FileMaintenance(Protocol):
    """What only a store that is a file pcmem keeps itself (DuckDB) offers: its path (the owner that serves it to
    other processes is found by it), and the check and repair of ``pcmem check`` and ``reindex --analyzer``; other
    engines keep their own integrity and do not offer it."""

    #: The store file, resolved once (see :meth:`pcmem.store.engine.StorageEngine.locate`).
    path: Path

    def check(self) -> CheckReport:
        """Verify migrations, the revision chain, entry hashes and that the search projections agree with the log."""

    def repair(self, analyzer: str | None = None) -> CheckReport:
        """Rebuild derived data from the event log (optionally with another full-text analyzer); the check after."""
