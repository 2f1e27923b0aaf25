"""The semantics of one scope's Memory (SPEC §1), synchronous.

This is where remember/revise/retire/reactivate decide what a revision contains, where compare-and-swap is checked
and where the per-scope mutation lock is held. Storage is delegated to a :class:`~pcmem.store.port.StorageBackend`.
The async API (:class:`pcmem.memory.service.ScopedMemory`) runs these methods in a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from datetime import UTC, datetime

import numpy as np

from pcmem.errors import ConfigurationError, EntryNotFoundError, InputError, RevisionConflictError, RevisionNotFoundError, ScopeNotFoundError
from pcmem.ids import content_hash, new_id
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
    WriteResult,
)
from pcmem.memory.write_gate import WriteGate
from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.rerank.port import MemoryReranker
from pcmem.types.progress import Progress
from pcmem.types.search import SearchMemoryRequest, SearchPage
from pcmem.search.service import DEFAULT_CANDIDATE_LIMIT, SearchService
from pcmem.types.storage import EntryEvent, HeadEntry
from pcmem.store.port import StorageBackend, WriteTransaction
from pcmem.validation import canonical_json, validate_id, validate_revision, validate_scope

Clock = Callable[[], datetime]


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


def _citation(memory: MemoryRef, version: EntryVersion) -> Citation:
    return Citation(
        artifact_id=memory.artifact_id,
        revision=memory.revision,
        entry_id=version.entry_id,
        entry_version_id=version.entry_version_id,
    )


def _check_expected(tx: WriteTransaction, expected: int | None) -> None:
    _check_head(tx.memory, expected)


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
    write_gate: WriteGate | None = None
    #: Finds the embedder for a vector space the store switched to after this runtime opened (``None``: none).
    embedder_for: Callable[[EmbeddingProfile], Embedder | None] | None = None

    def __post_init__(self) -> None:
        self.use_embedder(self.embedder)

    def use_embedder(self, embedder: Embedder | None) -> None:
        """Switch every scope handle of this runtime to ``embedder`` (after the store switched vector space)."""
        self.embedder = embedder
        self.search = SearchService(self.backend, embedder, self.reranker, self.candidate_limit)

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

    def head(self) -> MemoryRef | None:
        """The scope's head revision, or ``None`` when nothing was remembered in it yet."""
        return self._backend.find_memory(self.scope)

    def _memory(self) -> MemoryRef:
        memory = self._backend.find_memory(self.scope)
        if memory is None:
            raise ScopeNotFoundError(f"scope {self.scope!r} has no memory (nothing was remembered in it)")
        return memory

    def _at(self, revision: int | None) -> MemoryRef:
        if revision is not None:
            revision = validate_revision(revision)
        memory = self._memory()
        if revision is None:
            return memory
        if not 1 <= revision <= memory.revision:
            raise RevisionNotFoundError(
                f"scope {self.scope!r} has revisions 1..{memory.revision}; revision {revision} does not exist"
            )
        return memory.model_copy(update={"revision": revision})

    def list(self, request: ListRequest | None = None) -> EntryPage:
        """The exact manifest of the head (or of ``request.revision``), ordered by entry id."""
        request = _expect(request or ListRequest(), ListRequest, "list")
        memory = self._at(request.revision)
        entries = self._backend.manifest(memory, include_retired=request.state == "all")
        return EntryPage(memory=memory, entries=tuple(entries))

    def get(self, citation: Citation) -> MemoryEntry:
        """Read back exactly the entry version a citation names, as it stood in the cited revision."""
        citation = _expect(citation, Citation, "get")
        memory = self._at(citation.revision)
        if citation.artifact_id != memory.artifact_id:
            raise EntryNotFoundError(f"citation {citation} belongs to another memory than scope {self.scope!r}")
        entry = self._backend.entry_in_revision(memory, citation.entry_id)
        if entry is None or entry.entry.entry_version_id != citation.entry_version_id:
            raise EntryNotFoundError(f"citation {citation} does not name an entry version of revision {memory.revision}")
        return entry

    def get_entry(self, entry_id: str, revision: int | None = None) -> MemoryEntry:
        """An entry as it stands at the head (or at ``revision``), active or retired."""
        entry_id = validate_id(entry_id)
        memory = self._at(revision)
        entry = self._backend.entry_in_revision(memory, entry_id)
        if entry is None:
            raise EntryNotFoundError(f"no entry {entry_id!r} in scope {self.scope!r} at revision {memory.revision}")
        return entry

    def changes(self, since_revision: int = 0) -> ChangesPage:
        """Every entry changed after ``since_revision``, up to the head."""
        since = validate_revision(since_revision, "since_revision")
        memory = self._memory()
        if since > memory.revision:
            raise RevisionNotFoundError(f"since_revision {since} is past the head revision {memory.revision}")
        return ChangesPage(memory=memory, since_revision=since, changes=tuple(self._backend.changes(memory, since)))

    def history(self, entry_id: str) -> EntryHistory:
        """Every revision that changed this entry, with the version it pointed at, oldest first."""
        entry_id = validate_id(entry_id)
        memory = self._memory()
        events = self._backend.history(memory, entry_id)
        if not events:
            raise EntryNotFoundError(f"no entry {entry_id!r} in scope {self.scope!r}")
        return EntryHistory(memory=memory, entry_id=entry_id, events=tuple(events))

    def revisions(self) -> list[RevisionInfo]:
        """Every revision of this scope, oldest first."""
        return self._backend.revisions(self._memory())

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
        """
        if isinstance(request, str):
            request = SearchMemoryRequest(query=request)
        elif not isinstance(request, SearchMemoryRequest):
            raise InputError(f"search takes a SearchMemoryRequest or a str, not {type(request).__name__}")
        if not rerank:
            return self._parts.search.coarse(self.scope, request)
        return self._parts.search.search(self.scope, request, reranker, progress)

    # --- writes -----------------------------------------------------------------------------------------------

    def remember(self, request: RememberRequest | NewEntry | str) -> WriteResult:
        """Add entries in one new revision (creating the scope's memory on first use)."""
        request = _as_remember(request)
        if request.expected_revision is not None and self._parts.write_gate is not None:
            _check_head(self.head(), request.expected_revision)  # fail fast, before spending model decisions
        duplicates = self._gate(request)
        skipped = {duplicate.index for duplicate in duplicates}
        entries = [entry for index, entry in enumerate(request.entries) if index not in skipped]
        if not entries:
            return WriteResult(memory=self._memory(), citations=(), duplicates=duplicates)
        now = self._clock()
        drafts = [_first_version(entry, 0, now) for entry in entries]
        # Embedding is the slow part of a write: do it before taking the scope lock.
        texts = {v.entry_version_id: v.text for v in drafts}
        prepared = self._parts.vectors_for(texts)
        with self._lock, self._backend.write(self.scope) as tx:
            _check_expected(tx, request.expected_revision)
            wanted = [entry.entry_id for entry in entries if entry.entry_id is not None]
            taken = tx.existing_entry_ids(wanted)
            if taken:
                raise InputError(f"entry ids already exist in scope {self.scope!r}: {sorted(taken)[:5]}; use revise")
            revision = _next_revision(tx)
            versions = [v.model_copy(update={"created_in_revision": revision}) for v in drafts]
            events = [EntryEvent(v.entry_id, v.entry_version_id, "active") for v in versions]
            vectors = self._parts.vectors_inside(tx, texts, prepared)
            memory = tx.commit("remember", versions, events, now, vectors)
        return WriteResult(memory=memory, citations=tuple(_citation(memory, v) for v in versions),
                           duplicates=duplicates)

    def _gate(self, request: RememberRequest) -> tuple[Duplicate, ...]:
        """Ask the write gate (if any) about each entry; runs before the scope lock is taken."""
        gate = self._parts.write_gate
        if gate is None or request.allow_duplicates or self.head() is None:
            return ()
        found = []
        for index, entry in enumerate(request.entries):
            existing = gate.duplicate_of(entry.text, lambda search: self._parts.search.coarse(self.scope, search))
            if existing is not None:
                found.append(Duplicate(index=index, text=entry.text, existing=existing))
        return tuple(found)

    def revise(self, request: ReviseRequest) -> WriteResult:
        """Write a new version of an active entry. An unchanged text/kind/metadata writes nothing."""
        request = _expect(request, ReviseRequest, "revise")
        now = self._clock()
        version_id = new_id("ver")
        prepared = self._parts.vectors_for({version_id: request.text})
        with self._lock, self._backend.write(self.scope) as tx:
            current = self._head_entry(tx, request)
            if current.state != "active":
                raise RevisionConflictError(f"entry {request.entry_id!r} is retired; reactivate it before revising")
            old = current.version
            kind = request.kind if request.kind is not None else old.kind
            metadata = request.metadata if request.metadata is not None else old.metadata
            # Canonical JSON keeps types apart: true/1 and 1.0/1 are different metadata (Python's == says equal).
            if (request.text, kind, canonical_json(metadata)) == (old.text, old.kind, canonical_json(old.metadata)):
                return WriteResult(memory=tx.memory, citations=(_citation(tx.memory, old),), unchanged=True)
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
            memory = tx.commit("revise", [version], [event], now, vectors)
        return WriteResult(memory=memory, citations=(_citation(memory, version),))

    def retire(self, request: RetireRequest) -> WriteResult:
        """Deactivate an entry; it stays readable in past revisions and in its history."""
        return self._set_state(request, "retire", from_state="active", to_state="retired")

    def reactivate(self, request: ReactivateRequest) -> WriteResult:
        """Make a retired entry active again at the version it had."""
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
        now = self._clock()
        with self._lock, self._backend.write(self.scope) as tx:
            current = self._head_entry(tx, request)
            if current.state != from_state:
                raise RevisionConflictError(f"cannot {operation} entry {request.entry_id!r}: it is {current.state}")
            version = current.version
            vectors: dict[str, np.ndarray] = {}
            if to_state == "active" and tx.missing_vectors([version.entry_version_id]):
                texts = {version.entry_version_id: version.text}  # rare: written unembedded
                vectors = self._parts.vectors_inside(tx, texts, Prepared(None, {}))
            event = EntryEvent(version.entry_id, version.entry_version_id, to_state)
            memory = tx.commit(operation, [], [event], now, vectors)
        return WriteResult(memory=memory, citations=(_citation(memory, version),))

    def _head_entry(self, tx: WriteTransaction, request: ReviseRequest | RetireRequest | ReactivateRequest) -> HeadEntry:
        if tx.memory is None:
            raise ScopeNotFoundError(f"scope {self.scope!r} has no memory (nothing was remembered in it)")
        _check_expected(tx, request.expected_revision)
        current = tx.head_entry(request.entry_id)
        if current is None:
            raise EntryNotFoundError(f"no entry {request.entry_id!r} in scope {self.scope!r}")
        return current


def _as_remember(request: RememberRequest | NewEntry | str) -> RememberRequest:
    if isinstance(request, RememberRequest):
        return request
    if isinstance(request, str):
        return RememberRequest(entries=(NewEntry(text=request),))
    if isinstance(request, NewEntry):
        return RememberRequest(entries=(request,))
    raise InputError(f"remember takes a RememberRequest, a NewEntry or a str, not {type(request).__name__}")


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
