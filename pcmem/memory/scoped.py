"""The semantics of one scope's Memory (SPEC §1), synchronous.

This is where remember/revise/retire/reactivate decide what a revision contains, where compare-and-swap is checked
and where the per-scope mutation lock is held. Storage is delegated to a :class:`~pcmem.store.port.StorageBackend`.
The async API (:class:`pcmem.memory.service.ScopedMemory`) runs these methods in a worker thread.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.errors import (
    ConcurrentWriteError,
    ConfigurationError,
    EntryErasedError,
    EntryNotFoundError,
    InputError,
    RevisionConflictError,
    RevisionNotFoundError,
    ScopeNotFoundError,
)
from pcmem.ids import content_hash, new_id
from pcmem.memory import paging
from pcmem.memory.write_gate import WriteGate
from pcmem.rerank.port import MemoryReranker
from pcmem.search.service import DEFAULT_CANDIDATE_LIMIT, SearchService
from pcmem.settings import SearchFusion
from pcmem.store.port import StorageBackend, WriteTransaction
from pcmem.types.memory import (
    ChangesPage,
    Citation,
    Duplicate,
    EntryHistory,
    EntryPage,
    EntryState,
    EntryVersion,
    ListRequest,
    MemoryEntry,
    MemoryRef,
    NewEntry,
    Operation,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    RevisionInfo,
    Tombstone,
    WriteResult,
)
from pcmem.types.progress import Progress
from pcmem.types.search import SearchMemoryRequest, SearchPage
from pcmem.types.storage import EntryEvent, HeadEntry
from pcmem.validation import canonical_json, validate_flag, validate_id, validate_revision, validate_scope

if TYPE_CHECKING:
    import numpy as np

Clock = Callable[[], datetime]

#: Attempts of a write without a scope expectation when another process commits to the scope at the same moment
#: (DuckDB reports a write-write conflict, seekdb a duplicate scope row): the write is re-decided on the new head.
WRITE_ATTEMPTS = 6


@dataclass(frozen=True)
class Prepared:
    """Vectors computed before a write transaction, and the store profile they were computed for."""

    profile: EmbeddingProfile | None
    vectors: dict[str, np.ndarray]


def utc_now() -> datetime:
    return datetime.now(UTC)


class ScopeLocks:
    """One mutation lock per scope, shared by every handle on the same store."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def __call__(self, scope: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(scope, threading.Lock())


def _check_expected(tx: WriteTransaction, expected: int | None) -> None:
    _check_head(tx.memory, expected)


def _check_version(current: HeadEntry, expected: int | None) -> None:
    if expected is not None and current.version.version != expected:
        raise RevisionConflictError(
            f"expected version {expected} of entry {current.version.entry_id!r} but it is at version "
            f"{current.version.version}", expected=expected, actual=current.version.version)


def _retrying(write: Callable[[], WriteResult], retry: bool) -> WriteResult:
    """Run ``write``; when it has no scope expectation, re-run it after a lost race with another process."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            return write()
        except ConcurrentWriteError:
            if not retry or attempt == WRITE_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.002, 0.01) * 2**attempt)  # jittered backoff: ≤ ~0.6 s over all attempts
    raise AssertionError("unreachable")


def _check_head(memory: MemoryRef | None, expected: int | None) -> None:
    head = 0 if memory is None else memory.revision
    if expected is not None and expected != head:
        raise RevisionConflictError(
            f"expected revision {expected} but the head of scope is {head}", expected=expected, actual=head
        )


@dataclass
class MemoryParts:
    """What every scope handle of one runtime shares: storage, locks, clock, embedder and search."""

    backend: StorageBackend
    embedder: Embedder | None = None
    clock: Clock = utc_now
    locks: ScopeLocks = field(default_factory=ScopeLocks)
    reranker: MemoryReranker | None = None
    candidate_limit: int = DEFAULT_CANDIDATE_LIMIT
    #: How a search that does not choose fuses its channels (``rrf``: the contract's).
    fusion: SearchFusion = "rrf"
    write_gate: WriteGate | None = None
    #: Finds the embedder for a vector space the store switched to after this runtime opened (``None``: none).
    embedder_for: Callable[[EmbeddingProfile], Embedder | None] | None = None
    #: The embedding reranker's second embedder: writes store its vectors when its profile is the store's secondary
    #: profile, and the embedding policy uses it when no embedder was chosen for that search.
    rerank_embedder: Embedder | None = None
    #: Finds the embedder of the store's secondary profile when this runtime has none for it (``"auto"``); looked up
    #: on first need (a write, an embedding rerank), never at open.
    rerank_embedder_for: Callable[[EmbeddingProfile], Embedder | None] | None = None

    def __post_init__(self) -> None:
        self.use_embedder(self.embedder)

    def use_embedder(self, embedder: Embedder | None) -> None:
        """Switch every scope handle of this runtime to ``embedder`` (after the store switched vector space)."""
        self.embedder = embedder
        self.search = SearchService(self.backend, embedder, self.reranker, self.candidate_limit,
                                    rerank_embedder=self.search_rerank_embedder, fusion=self.fusion)

    def use_rerank_embedder(self, embedder: Embedder | None) -> None:
        """Fill (and rerank with) ``embedder``'s vectors from now on (after ``reindex --rerank-embedder``)."""
        self.rerank_embedder = embedder

    def secondary_embedder(self, current: EmbeddingProfile) -> Embedder | None:
        """The embedder of the store's secondary profile ``current``: this runtime's rerank embedder, or the one its
        finder gives (``"auto"``, which then becomes the runtime's); ``None`` when neither has that profile."""
        embedder = self.rerank_embedder
        if (embedder is None or embedder.profile != current) and self.rerank_embedder_for is not None:
            found = self.rerank_embedder_for(current)
            if found is not None:
                self.rerank_embedder = embedder = found
        return embedder if embedder is not None and embedder.profile == current else None

    def search_rerank_embedder(self) -> Embedder | None:
        """The embedding policy's default second embedder (the search service asks only for that policy)."""
        if self.rerank_embedder is None and self.rerank_embedder_for is not None:
            current = self.backend.secondary_embedding_profile()
            if current is not None:
                self.secondary_embedder(current)
        return self.rerank_embedder

    def secondary_for(self, texts_by_version: dict[str, str]) -> Prepared:
        """Second-embedder vectors for new versions, computed before the write transaction, when the store keeps that
        embedder's vectors (its secondary profile). :meth:`store_secondary` re-checks inside the transaction."""
        if not texts_by_version or self.rerank_embedder is None:
            return Prepared(None, {})  # no read: in shared mode every transaction opens the file
        profile = self.backend.secondary_embedding_profile()
        if profile != self.rerank_embedder.profile:
            return Prepared(profile, {})
        ids = list(texts_by_version)
        matrix = self.rerank_embedder.embed_documents([texts_by_version[i] for i in ids])
        return Prepared(profile, dict(zip(ids, matrix, strict=True)))

    def store_secondary(self, tx: WriteTransaction, texts_by_version: dict[str, str], prepared: Prepared) -> None:
        """Store the secondary vectors of the versions a write makes active, in the write's own transaction.

        Only when this runtime's rerank embedder (or under ``"auto"`` the prepared model of that profile) has the
        store's secondary profile, as the transaction sees it. A failing embedder fails the write (EmbeddingError),
        like the store's own embedder: an acknowledged write has its secondary vectors. A runtime with another or no
        such embedder stores none: ``pcmem reindex --rerank-embedder`` fills them, and until then the reranker
        embeds those candidates in process.
        """
        if not texts_by_version or (self.rerank_embedder is None and self.rerank_embedder_for is None):
            return  # no read: this runtime stores no secondary vectors
        current = tx.secondary_embedding_profile()
        embedder = None if current is None else self.secondary_embedder(current)
        if current is None or embedder is None:
            return
        vectors = {k: prepared.vectors[k] for k in texts_by_version if k in prepared.vectors} \
            if prepared.profile == current else {}
        missing = [k for k in texts_by_version if k not in vectors]
        if missing:
            vectors.update(zip(missing, embedder.embed_documents([texts_by_version[k] for k in missing]), strict=True))
        tx.store_secondary_vectors(current, vectors)

    def vectors_for(self, texts_by_version: dict[str, str]) -> Prepared:
        """Embed new versions when the store's vector space is the embedder's; else store none (reindex later).

        Runs before the write transaction (embedding is the slow part); :meth:`vectors_inside` re-checks the store's
        vector space inside it, because another runtime or process may have switched it meanwhile.
        """
        if not texts_by_version or self.embedder is None:
            return Prepared(None, {})  # no read: in shared mode every transaction opens the file
        profile = self.backend.embedding_profile()
        if profile != self.embedder.profile:
            return Prepared(profile, {})
        ids = list(texts_by_version)
        matrix = self.embedder.embed_documents([texts_by_version[i] for i in ids])
        return Prepared(profile, dict(zip(ids, matrix, strict=True)))

    def vectors_inside(self, tx: WriteTransaction, texts_by_version: dict[str, str],
                       prepared: Prepared) -> dict[str, np.ndarray]:
        """The vectors to commit, decided inside the write transaction against the store's current vector space.

        A vector made for another profile is never stored (an ``reindex --embedder`` may have committed since it
        was computed): the texts are embedded again with the right model, or the write is refused with a typed
        error when this runtime has no embedder for the store's vectors.
        """
        current = tx.embedding_profile()
        if current is None or not texts_by_version:
            return {}
        if prepared.profile == current and len(prepared.vectors) == len(texts_by_version):
            return prepared.vectors
        embedder = self.embedder
        if (embedder is None or embedder.profile != current) and self.embedder_for is not None:
            embedder = self.embedder_for(current)
            if embedder is not None:
                self.use_embedder(embedder)
        if embedder is None or embedder.profile != current:
            have = "no embedder" if self.embedder is None else f"the embedder {self.embedder.profile.describe()}"
            raise ConfigurationError(
                f"this runtime was opened with {have}, but the store's vectors are {current.describe()}: an entry "
                "written now would be missing from vector search. Open the store with embedder='auto' (the CLI "
                "does), or switch the store with `pcmem reindex --embedder ...`")
        ids = list(texts_by_version)
        matrix = embedder.embed_documents([texts_by_version[i] for i in ids])
        return dict(zip(ids, matrix, strict=True))


class SyncScopedMemory:
    """Blocking operations on one scope. Obtain it from ``SyncRuntime.memory.for_scope(scope)``."""

    def __init__(self, parts: MemoryParts, scope: str) -> None:
        self.scope = validate_scope(scope)
        self._parts = parts
        self._backend = parts.backend
        self._lock = parts.locks(self.scope)
        self._clock = parts.clock

    # --- reads ------------------------------------------------------------------------------------------------
    # One rule for every read: a scope with no memory reads as an empty memory at revision 0 — list, changes,
    # revisions and search return empty results; an entry that is not there (never written, or in a scope with no
    # memory) is EntryNotFoundError, and one that was forgotten is EntryErasedError (a subclass).

    def head(self) -> MemoryRef | None:
        """The scope's head revision, or ``None`` when nothing was remembered in it yet. Raises StoreError."""
        return self._backend.find_memory(self.scope)

    def _at(self, revision: int | None) -> MemoryRef | None:
        if revision is not None:
            revision = validate_revision(revision)
        memory = self._backend.find_memory(self.scope)
        head = 0 if memory is None else memory.revision
        if revision is None or memory is None and revision == 0:
            return memory
        if not 1 <= revision <= head:
            raise RevisionNotFoundError(
                f"scope {self.scope!r} has revisions 1..{head}; revision {revision} does not exist"
                if head else f"scope {self.scope!r} has no revisions yet; revision {revision} does not exist"
            )
        assert memory is not None
        return memory.model_copy(update={"revision": revision})

    def list(self, request: ListRequest | None = None) -> EntryPage:
        """The exact manifest of the head (or of ``request.revision``), ordered by entry id.

        Returns an :class:`EntryPage` (``memory`` is ``None`` and ``entries`` empty for a scope with no memory).
        With ``request.limit`` the page holds at most that many entries and ``next_cursor`` continues it, pinned to
        the revision of the first page. Raises RevisionNotFoundError for a revision outside 1..head,
        InvalidCursorError / StaleCursorError for a cursor pcmem did not issue for this listing or one an erasure
        made stale, InputError for bad values.
        """
        request = _expect(request or ListRequest(), ListRequest, "list")
        return paging.list_page(self._backend, self.scope, request, self._at)

    def get(self, citation: Citation) -> MemoryEntry:
        """Read back exactly the entry version a citation names, as it stood in the cited revision.

        Raises EntryNotFoundError when the citation names nothing in this scope, EntryErasedError when the entry
        was forgotten, RevisionNotFoundError for a revision outside 1..head.
        """
        citation = _expect(citation, Citation, "get")
        if self.head() is None:
            raise EntryNotFoundError(f"citation {citation} names nothing in scope {self.scope!r} (it has no memory)")
        memory = self._at(citation.revision)
        assert memory is not None
        if citation.artifact_id != memory.artifact_id:
            raise EntryNotFoundError(f"citation {citation} belongs to another memory than scope {self.scope!r}")
        entry = self._backend.entry_in_revision(memory, citation.entry_id)
        if entry is None:
            self._raise_if_erased(memory, citation.entry_id)
        if entry is None or entry.entry.entry_version_id != citation.entry_version_id:
            raise EntryNotFoundError(f"citation {citation} does not name an entry version of revision {memory.revision}")
        return entry

    def get_entry(self, entry_id: str, revision: int | None = None) -> MemoryEntry:
        """An entry as it stands at the head (or at ``revision``), active or retired.

        Raises EntryNotFoundError when it does not exist there (also in a scope with no memory), EntryErasedError
        when it was forgotten, RevisionNotFoundError for a revision outside 1..head.
        """
        entry_id = validate_id(entry_id)
        memory = self._at(revision)
        entry = None if memory is None else self._backend.entry_in_revision(memory, entry_id)
        if entry is None:
            if memory is not None:
                self._raise_if_erased(memory, entry_id)
            at = f" at revision {memory.revision}" if memory is not None else " (it has no memory)"
            raise EntryNotFoundError(f"no entry {entry_id!r} in scope {self.scope!r}{at}")
        return entry

    def changes(self, since_revision: int = 0, *, limit: int | None = None, cursor: str | None = None) -> ChangesPage:
        """Every entry change after ``since_revision`` up to the head, in revision then entry-id order.

        Returns a :class:`ChangesPage` (empty, with ``memory`` ``None``, for a scope with no memory). With ``limit``
        (1..100) the page holds at most that many changes and ``next_cursor`` continues it, pinned to the head of
        the first page. Raises RevisionNotFoundError when ``since_revision`` is past the head, InputError for a
        negative one, InvalidCursorError / StaleCursorError for a bad or stale cursor.
        """
        return paging.changes_page(self._backend, self.scope, since_revision, limit, cursor)

    def history(self, entry_id: str) -> EntryHistory:
        """Every revision that changed this entry, with the version it pointed at, oldest first.

        Raises EntryNotFoundError for an unknown entry (also in a scope with no memory), EntryErasedError for a
        forgotten one.
        """
        entry_id = validate_id(entry_id)
        memory = self.head()
        events = [] if memory is None else self._backend.history(memory, entry_id)
        if not events:
            if memory is not None:
                self._raise_if_erased(memory, entry_id)
            raise EntryNotFoundError(f"no entry {entry_id!r} in scope {self.scope!r}")
        return EntryHistory(memory=memory, entry_id=entry_id, events=tuple(events))

    def revisions(self) -> builtins.list[RevisionInfo]:
        """Every revision of this scope, oldest first (empty for a scope with no memory). Raises StoreError."""
        memory = self.head()
        return [] if memory is None else self._backend.revisions(memory)

    def tombstone(self, entry_id: str) -> Tombstone | None:
        """What remains of a forgotten entry (its ids and the revision that erased it), or ``None`` when the entry was
        not forgotten (or does not exist). Raises InputError for a bad id, StoreError."""
        memory = self.head()
        return None if memory is None else self._backend.tombstone(memory, validate_id(entry_id))

    def _raise_if_erased(self, memory: MemoryRef, entry_id: str) -> None:
        tombstone = self._backend.tombstone(memory, entry_id)
        if tombstone is not None and tombstone.erased_in_revision <= self._head_revision():
            raise EntryErasedError(
                f"entry {entry_id!r} of scope {self.scope!r} was forgotten in revision {tombstone.erased_in_revision};"
                " its text and metadata no longer exist", tombstone=tombstone)

    def _head_revision(self) -> int:
        memory = self.head()
        return 0 if memory is None else memory.revision

    def search(
        self,
        request: SearchMemoryRequest | str,
        *,
        reranker: MemoryReranker | None = None,
        rerank: bool = True,
        progress: Progress | None = None,
    ) -> SearchPage:
        """Hybrid retrieval over the head revision (SPEC §2), then the runtime's reranker if one is configured.

        ``reranker`` overrides the runtime's for this call (e.g. the CLI's ``--rerank``); ``rerank=False`` returns
        the coarse page even when the runtime has a reranker; ``progress`` receives (done, total) from
        per-candidate rerankers. A plain string searches with the defaults.

        Returns a :class:`SearchPage` (no hits and ``memory`` ``None`` for a scope with no memory). Raises
        InputError for a bad request, CapabilityNotSupportedError for an explicit mode the store cannot run,
        EmbeddingError when embedding the query fails (except in auto mode), InferenceError / RerankError when the
        reranker fails (rerank fails closed), StoreError.
        """
        if isinstance(request, str):
            request = SearchMemoryRequest(query=request)
        elif not isinstance(request, SearchMemoryRequest):
            raise InputError(f"search takes a SearchMemoryRequest or a str, not {type(request).__name__}")
        if not validate_flag(rerank, "rerank"):
            return self._parts.search.coarse((self.scope,), request)
        return self._parts.search.search((self.scope,), request, reranker, progress)

    # --- writes -----------------------------------------------------------------------------------------------

    def remember(
        self,
        request: RememberRequest | NewEntry | str,
        *,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        entry_id: str | None = None,
        upsert: bool = False,
    ) -> WriteResult:
        """Add entries in one new revision (creating the scope's memory on first use).

        ``request`` is a :class:`RememberRequest`, one :class:`NewEntry` or a text; with a text, ``kind``,
        ``metadata``, ``entry_id`` and ``upsert`` build the entry (``remember("...", entry_id="k", upsert=True)``).
        Returns a :class:`WriteResult` with a citation per entry written or left unchanged, in request order.
        Without ``expected_revision`` a race lost to another process is retried internally; with it, a head other
        than the expected one raises RevisionConflictError. Raises InputError (bad values, an existing id without
        upsert, the id of a forgotten entry), ConfigurationError (no embedder for the store's vectors),
        EmbeddingError, StoreError. Nothing is written when it raises.
        """
        request = _as_remember(request, kind=kind, metadata=metadata, entry_id=entry_id, upsert=upsert)
        return _retrying(lambda: self._remember(request), retry=request.expected_revision is None)

    def _remember(self, request: RememberRequest) -> WriteResult:
        if request.expected_revision is not None and self._parts.write_gate is not None:
            _check_head(self.head(), request.expected_revision)  # fail fast, before spending model decisions
        duplicates = self._gate(request)
        skipped = {duplicate.index for duplicate in duplicates}
        entries = [entry for index, entry in enumerate(request.entries) if index not in skipped]
        if not entries:
            memory = self.head()
            assert memory is not None  # the gate only runs on a scope with memory
            return WriteResult(memory=memory, citations=(), duplicates=duplicates)
        now = self._clock()
        drafts = [_first_version(entry, 0, now) for entry in entries]
        # Embedding is the slow part of a write: do it before taking the scope lock.
        texts = {v.entry_version_id: v.text for v in drafts}
        prepared = self._parts.vectors_for(texts)
        secondary = self._parts.secondary_for(texts)
        with self._lock, self._backend.write(self.scope) as tx:
            _check_expected(tx, request.expected_revision)
            revision = _next_revision(tx)
            plan = _plan_upsert(tx, self.scope, drafts, request.upsert, revision)
            if not plan.events:
                assert tx.memory is not None
                return WriteResult(memory=tx.memory, citations=tuple(Citation.of(tx.memory, v) for v in plan.cited),
                                   duplicates=duplicates, unchanged=True, unchanged_entry_ids=plan.unchanged)
            written = {v.entry_version_id: v.text for v in plan.versions}
            vectors = self._parts.vectors_inside(
                tx, written, Prepared(prepared.profile, {k: prepared.vectors[k] for k in written
                                                         if k in prepared.vectors}))
            vectors.update(self._revived_vectors(tx, plan.revived))
            self._parts.store_secondary(tx, written, secondary)
            self._revived_secondary(tx, plan.revived)
            memory = tx.commit("remember" if plan.created else "revise", plan.versions, plan.events, now, vectors)
        return WriteResult(memory=memory, citations=tuple(Citation.of(memory, v) for v in plan.cited),
                           duplicates=duplicates, unchanged_entry_ids=plan.unchanged)

    def _revived_vectors(self, tx: WriteTransaction, revived: builtins.list[EntryVersion]) -> dict[str, np.ndarray]:
        """Vectors for versions made active again that were written unembedded (rare)."""
        missing = tx.missing_vectors([v.entry_version_id for v in revived]) if revived else set()
        texts = {v.entry_version_id: v.text for v in revived if v.entry_version_id in missing}
        return self._parts.vectors_inside(tx, texts, Prepared(None, {})) if texts else {}

    def _revived_secondary(self, tx: WriteTransaction, revived: builtins.list[EntryVersion]) -> None:
        """Secondary vectors of versions made active again (rare; re-embedded, as a stored one may be missing)."""
        if revived:
            self._parts.store_secondary(tx, {v.entry_version_id: v.text for v in revived}, Prepared(None, {}))

    def _gate(self, request: RememberRequest) -> tuple[Duplicate, ...]:
        """Ask the write gate (if any) about each entry; runs before the scope lock is taken."""
        gate = self._parts.write_gate
        if gate is None or request.allow_duplicates or self.head() is None:
            return ()
        found = []
        for index, entry in enumerate(request.entries):
            if request.upsert and entry.entry_id is not None:
                continue  # an upsert by key: the key decides what is the same entry
            existing = gate.duplicate_of(entry.text, lambda search: self._parts.search.coarse((self.scope,), search))
            if existing is not None:
                found.append(Duplicate(index=index, text=entry.text, existing=existing))
        return tuple(found)

    def revise(self, request: ReviseRequest) -> WriteResult:
        """Write a new version of an active entry. An unchanged text/kind/metadata writes nothing (``unchanged``).

        Compare-and-swap on ``request.expected_revision`` (the scope head) and/or ``request.expected_version`` (the
        entry's version: writes to other entries never conflict with it). Returns a :class:`WriteResult` with the
        new version's citation. Raises RevisionConflictError when an expectation does not hold or the entry is
        retired, EntryNotFoundError / EntryErasedError, ConfigurationError, EmbeddingError, StoreError.
        """
        request = _expect(request, ReviseRequest, "revise")
        return _retrying(lambda: self._revise(request), retry=request.expected_revision is None)

    def _revise(self, request: ReviseRequest) -> WriteResult:
        now = self._clock()
        version_id = new_id("ver")
        prepared = self._parts.vectors_for({version_id: request.text})
        secondary = self._parts.secondary_for({version_id: request.text})
        with self._lock, self._backend.write(self.scope) as tx:
            current = self._head_entry(tx, request)
            assert tx.memory is not None  # the entry exists, so the scope has a head
            if current.state != "active":
                raise RevisionConflictError(f"entry {request.entry_id!r} is retired; reactivate it before revising")
            old = current.version
            kind = request.kind if request.kind is not None else old.kind
            metadata = request.metadata if request.metadata is not None else old.metadata
            # Canonical JSON keeps types apart: true/1 and 1.0/1 are different metadata (Python's == says equal).
            if _same_content(request.text, kind, metadata, old):
                assert tx.memory is not None
                return WriteResult(memory=tx.memory, citations=(Citation.of(tx.memory, old),), unchanged=True,
                                   unchanged_entry_ids=(old.entry_id,))
            version = EntryVersion(
                entry_id=old.entry_id,
                entry_version_id=version_id,
                version=old.version + 1,
                kind=kind,
                text=request.text,
                content_hash=content_hash(request.text),
                metadata=metadata,
                created_in_revision=_next_revision(tx),
                created_at=now,
            )
            event = EntryEvent(old.entry_id, version.entry_version_id, "active")
            vectors = self._parts.vectors_inside(tx, {version_id: request.text}, prepared)
            self._parts.store_secondary(tx, {version_id: request.text}, secondary)
            memory = tx.commit("revise", [version], [event], now, vectors)
        return WriteResult(memory=memory, citations=(Citation.of(memory, version),))

    def retire(self, request: RetireRequest) -> WriteResult:
        """Deactivate an entry; it stays readable in past revisions and in its history.

        Compare-and-swap as :meth:`revise`. Returns the :class:`WriteResult` of the new revision. Raises
        RevisionConflictError (an expectation does not hold, or the entry is already retired), EntryNotFoundError /
        EntryErasedError, StoreError.
        """
        return self._set_state(request, "retire", from_state="active", to_state="retired")

    def reactivate(self, request: ReactivateRequest) -> WriteResult:
        """Make a retired entry active again at the version it had.

        Compare-and-swap as :meth:`revise`. Returns the :class:`WriteResult` of the new revision. Raises
        RevisionConflictError (an expectation does not hold, or the entry is active), EntryNotFoundError /
        EntryErasedError, ConfigurationError (its vector is missing and no embedder fits), StoreError.
        """
        return self._set_state(request, "reactivate", from_state="retired", to_state="active")

    def _set_state(
        self,
        request: RetireRequest | ReactivateRequest,
        operation: Operation,
        *,
        from_state: EntryState,
        to_state: EntryState,
    ) -> WriteResult:
        request = _expect(request, RetireRequest if operation == "retire" else ReactivateRequest, operation)
        return _retrying(lambda: self._set_state_once(request, operation, from_state, to_state),
                         retry=request.expected_revision is None)

    def _set_state_once(self, request: RetireRequest | ReactivateRequest, operation: Operation,
                        from_state: EntryState, to_state: EntryState) -> WriteResult:
        now = self._clock()
        with self._lock, self._backend.write(self.scope) as tx:
            current = self._head_entry(tx, request)
            if current.state != from_state:
                raise RevisionConflictError(f"cannot {operation} entry {request.entry_id!r}: it is {current.state}")
            version = current.version
            vectors: dict[str, np.ndarray] = {}
            if to_state == "active":
                vectors = self._revived_vectors(tx, [version])
                self._revived_secondary(tx, [version])
            event = EntryEvent(version.entry_id, version.entry_version_id, to_state)
            memory = tx.commit(operation, [], [event], now, vectors)
        return WriteResult(memory=memory, citations=(Citation.of(memory, version),))

    def _head_entry(self, tx: WriteTransaction, request: ReviseRequest | RetireRequest | ReactivateRequest) -> HeadEntry:
        _check_expected(tx, request.expected_revision)
        current = tx.head_entry(request.entry_id)
        if current is None:
            if tx.memory is not None and tx.existing_entry_ids([request.entry_id]):
                raise EntryErasedError(f"entry {request.entry_id!r} of scope {self.scope!r} was forgotten",
                                       tombstone=self._backend.tombstone(tx.memory, request.entry_id))
            raise EntryNotFoundError(f"no entry {request.entry_id!r} in scope {self.scope!r}")
        _check_version(current, request.expected_version)
        return current

    # --- erasure ----------------------------------------------------------------------------------------------

    def forget(self, entry_id: str) -> WriteResult:
        """Erase an entry for good: the text, kind-independent metadata and vectors of every version it ever had.

        Unlike every other write this changes the past: all revisions that held the entry lose its content. The
        revision chain stays intact — a new revision (operation ``forget``) records a tombstone with the entry's ids
        — and citations of the entry resolve to EntryErasedError. When it returns, the erased bytes are no longer in
        the store (the DuckDB file is checkpointed and the freed space overwritten; see the README). Forgetting an
        entry already erased is a no-op (``unchanged``). Returns the :class:`WriteResult` of the forget revision
        (its citation names the erased version). Raises EntryNotFoundError for an unknown entry, StoreError.
        Cannot be undone.
        """
        entry_id = validate_id(entry_id)
        return _retrying(lambda: self._forget([entry_id], whole_scope=False), retry=True)

    def forget_scope(self) -> WriteResult:
        """Erase every entry of this scope as :meth:`forget` does, in one revision (a no-op when nothing is left).

        Returns the :class:`WriteResult` of the forget revision (``unchanged`` when there was nothing to erase; a
        scope with no memory raises ScopeNotFoundError). The scope keeps its revision chain and can be written
        again (with new entry ids). Raises StoreError. Cannot be undone.
        """
        return _retrying(lambda: self._forget([], whole_scope=True), retry=True)

    def _forget(self, entry_ids: builtins.list[str], *, whole_scope: bool) -> WriteResult:
        now = self._clock()
        with self._lock, self._backend.write(self.scope) as tx:
            memory = tx.memory
            if memory is None:
                if whole_scope:
                    raise ScopeNotFoundError(f"scope {self.scope!r} has no memory (nothing was remembered in it)")
                raise EntryNotFoundError(f"no entry {entry_ids[0]!r} in scope {self.scope!r} (it has no memory)")
            if whole_scope:
                entry_ids = [e.entry.entry_id for e in self._backend.manifest(memory, include_retired=True)]
            events: builtins.list[EntryEvent] = []
            versions: builtins.list[EntryVersion] = []
            gone: builtins.list[str] = []
            for entry_id in entry_ids:
                current = tx.head_entry(entry_id)
                if current is None:
                    if not tx.existing_entry_ids([entry_id]):
                        raise EntryNotFoundError(f"no entry {entry_id!r} in scope {self.scope!r}")
                    gone.append(entry_id)
                    continue
                versions.append(current.version)
                events.append(EntryEvent(entry_id, current.version.entry_version_id, "erased"))
            if not events:
                return WriteResult(memory=memory, citations=(), unchanged=True, unchanged_entry_ids=tuple(gone))
            committed = tx.commit("forget", [], events, now, {})
            tx.erase([event.entry_id for event in events])
        self._backend.reclaim()  # after the commit: checkpoint and overwrite the freed space
        return WriteResult(memory=committed, citations=tuple(Citation.of(committed, v) for v in versions),
                           unchanged_entry_ids=tuple(gone))


def _as_remember(request: RememberRequest | NewEntry | str, *, kind: str | None, metadata: dict[str, Any] | None,
                 entry_id: str | None, upsert: bool) -> RememberRequest:
    upsert = validate_flag(upsert, "upsert")
    fields: dict[str, Any] = {"kind": kind, "metadata": metadata, "entry_id": entry_id}
    given = {name: value for name, value in fields.items() if value is not None}
    if isinstance(request, str):
        return RememberRequest(entries=(NewEntry(text=request, **given),), upsert=upsert)
    if given:
        raise InputError(f"kind/metadata/entry_id go into the {type(request).__name__}, not next to it")
    if isinstance(request, RememberRequest):
        return request.model_copy(update={"upsert": True}) if upsert else request
    if isinstance(request, NewEntry):
        return RememberRequest(entries=(request,), upsert=upsert)
    raise InputError(f"remember takes a RememberRequest, a NewEntry or a str, not {type(request).__name__}")


def _same_content(text: str, kind: str, metadata: dict[str, Any], old: EntryVersion) -> bool:
    """Text, kind and metadata equal as canonical JSON (types kept apart: true/1 and 1.0/1 differ)."""
    return (text, kind, canonical_json(metadata)) == (old.text, old.kind, canonical_json(old.metadata))


@dataclass
class _UpsertPlan:
    versions: list[EntryVersion] = field(default_factory=list)  # new versions to write
    events: list[EntryEvent] = field(default_factory=list)
    cited: list[EntryVersion] = field(default_factory=list)  # one per requested entry, in request order
    revived: list[EntryVersion] = field(default_factory=list)  # existing versions made active again
    unchanged: tuple[str, ...] = ()
    created: bool = False


def _plan_upsert(tx: WriteTransaction, scope: str, drafts: list[EntryVersion], upsert: bool,
                 revision: int) -> _UpsertPlan:
    """Decide, inside the write transaction, what each drafted entry becomes: new, a new version, or unchanged."""
    wanted = [draft.entry_id for draft in drafts]
    taken = tx.existing_entry_ids(wanted) if tx.memory is not None else set()
    if taken and not upsert:
        raise InputError(f"entry ids already exist in scope {scope!r}: {sorted(taken)[:5]}; use revise (or upsert)")
    plan = _UpsertPlan()
    unchanged = []
    for draft in drafts:
        current = tx.head_entry(draft.entry_id) if draft.entry_id in taken else None
        if draft.entry_id in taken and current is None:
            raise InputError(f"entry {draft.entry_id!r} of scope {scope!r} was forgotten; ids of forgotten entries "
                             "are not reused")
        if current is not None and _same_content(draft.text, draft.kind, draft.metadata, current.version):
            plan.cited.append(current.version)
            if current.state == "active":
                unchanged.append(draft.entry_id)
            else:
                plan.revived.append(current.version)
                plan.events.append(EntryEvent(draft.entry_id, current.version.entry_version_id, "active"))
            continue
        version = draft.model_copy(update={
            "created_in_revision": revision,
            "version": 1 if current is None else current.version.version + 1,
        })
        plan.created = plan.created or current is None
        plan.versions.append(version)
        plan.cited.append(version)
        plan.events.append(EntryEvent(version.entry_id, version.entry_version_id, "active"))
    plan.unchanged = tuple(unchanged)
    return plan
def _expect(value: Any, kind: type, method: str) -> Any:
    if not isinstance(value, kind):
        raise InputError(f"{method} takes a {kind.__name__}, not {type(value).__name__}")
    return value


def _next_revision(tx: WriteTransaction) -> int:
    return 1 if tx.memory is None else tx.memory.revision + 1


def _first_version(entry: NewEntry, revision: int, now: datetime) -> EntryVersion:
    return EntryVersion(
        entry_id=entry.entry_id or new_id("ent"),
        entry_version_id=new_id("ver"),
        version=1,
        kind=entry.kind,
        text=entry.text,
        content_hash=content_hash(entry.text),
        metadata=entry.metadata,
        created_in_revision=revision,
        created_at=now,
    )
