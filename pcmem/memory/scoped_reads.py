"""The reads of one scope's Memory, synchronous: the head, exact manifests of any revision, entries,
changes, histories, tombstones and search. :class:`~pcmem.memory.scoped.SyncScopedMemory` adds the writes.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pcmem.errors import EntryErasedError, EntryNotFoundError, RevisionNotFoundError
from pcmem.memory import arguments, context_block, keys, paging
from pcmem.memory.parts import RuntimeShared
from pcmem.memory.recent import recent_page
from pcmem.native_calls import entry_points
from pcmem.rerank.choice import RerankerChoice, reranker_choice
from pcmem.settings import SearchFusion
from pcmem.types.context import ContextBlock, ContextRequest, RecentPage, RecentRequest
from pcmem.types.memory import (
    ChangesPage,
    ChangesRequest,
    Citation,
    EntryHistory,
    EntryPage,
    EntryRequest,
    HistoryRequest,
    ListRequest,
    MemoryEntry,
    MemoryRef,
    RevisionInfo,
    Tombstone,
)
from pcmem.types.progress import Progress
from pcmem.types.search import SearchMemoryRequest, SearchMode, SearchPage
from pcmem.validation import validate_id, validate_revision, validate_scope


@entry_points  # each call counts as one native call: see pcmem.native_calls
class ScopedReads:
    """What one scope handle reads; every read sees one revision of the store."""

    def __init__(self, parts: RuntimeShared, scope: str) -> None:
        self.scope = validate_scope(scope)
        self._parts = parts
        self._backend = parts.backend

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

    def list(self, request: ListRequest | None = None, *, state: Literal["active", "all"] | None = None,
             revision: int | None = None, limit: int | None = None, cursor: str | None = None) -> EntryPage:
        """The exact manifest of the head (or of ``revision``), ordered by entry id: a :class:`ListRequest`, or its
        fields as keywords (``list(state="all", limit=10)``).

        Returns an :class:`EntryPage` (``memory`` is ``None`` and ``entries`` empty for a scope with no memory).
        With ``request.limit`` the page holds at most that many entries and ``next_cursor`` continues it, pinned to
        the revision of the first page. Raises RevisionNotFoundError for a revision outside 1..head,
        InvalidCursorError / StaleCursorError for a cursor pcmem did not issue for this listing or one an erasure
        made stale, InputError for bad values.
        """
        request = arguments.list_request(request, {"state": state, "revision": revision, "limit": limit,
                                                   "cursor": cursor})
        return paging.list_page(self._backend, self.scope, request, self._at)

    def get(self, citation: Citation) -> MemoryEntry:
        """Read back exactly the entry version a citation names, as it stood in the cited revision.

        Raises EntryNotFoundError when the citation names nothing in this scope, EntryErasedError when the entry
        was forgotten, RevisionNotFoundError for a revision outside 1..head.
        """
        citation = arguments.expect(citation, Citation, "get")
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

    def get_entry(self, entry_id: str | EntryRequest, revision: int | None = None) -> MemoryEntry:
        """An entry as it stands at the head (or at ``revision``), active or retired; or as an :class:`EntryRequest`
        says.

        Raises EntryNotFoundError when it does not exist there (also in a scope with no memory), EntryErasedError
        when it was forgotten, RevisionNotFoundError for a revision outside 1..head.
        """
        entry_id, revision = arguments.entry_of(entry_id, revision)
        memory = self._at(revision)
        entry = None if memory is None else self._backend.entry_in_revision(memory, entry_id)
        if entry is None and memory is not None:
            current_id = self._read_identity(memory, entry_id)
            entry = None if current_id == entry_id else self._backend.entry_in_revision(memory, current_id)
        if entry is None:
            if memory is not None:
                self._raise_if_erased(memory, entry_id)
            at = f" at revision {memory.revision}" if memory is not None else " (it has no memory)"
            raise EntryNotFoundError(f"no entry {entry_id!r} in scope {self.scope!r}{at}")
        return entry

    def changes(self, since_revision: int | ChangesRequest = 0, *, limit: int | None = None,
                cursor: str | None = None) -> ChangesPage:
        """Every entry change after ``since_revision`` up to the head, in revision then entry-id order; or as a
        :class:`ChangesRequest` says.

        Returns a :class:`ChangesPage` (empty, with ``memory`` ``None``, for a scope with no memory). With ``limit``
        (1..100) the page holds at most that many changes and ``next_cursor`` continues it, pinned to the head of
        the first page. Raises RevisionNotFoundError when ``since_revision`` is past the head, InputError for a
        negative one, InvalidCursorError / StaleCursorError for a bad or stale cursor.
        """
        since, limit, cursor = arguments.changes_of(since_revision, limit, cursor)
        return paging.changes_page(self._backend, self.scope, since, limit, cursor)

    def history(self, entry_id: str | HistoryRequest) -> EntryHistory:
        """Every revision that changed this entry (its id, or a :class:`HistoryRequest`), with the version it pointed
        at, oldest first.

        Raises EntryNotFoundError for an unknown entry (also in a scope with no memory), EntryErasedError for a
        forgotten one.
        """
        entry_id = arguments.entry_id_of(entry_id, HistoryRequest)
        memory = self.head()
        events = [] if memory is None else self._backend.history(memory, entry_id)
        if not events and memory is not None and (current_id := self._read_identity(memory, entry_id)) != entry_id:
            current_events = self._backend.history(memory, current_id)
            if current_events:
                events, entry_id = current_events, current_id
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
        entry_id = validate_id(entry_id)
        memory = self.head()
        return None if memory is None else self._backend.tombstone(memory, entry_id)

    def _read_identity(self, memory: MemoryRef, key: str) -> str:
        """The entry id a read of ``key`` finds (see :mod:`pcmem.memory.keys`): ``key`` itself unless it was
        forgotten, else its first generation that was not."""
        return next(entry_id for entry_id in keys.generations(key)
                    if self._backend.tombstone(memory, entry_id) is None)

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
        limit: int | None = None,
        mode: SearchMode | None = None,
        kinds: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        created_from: datetime | str | None = None,
        created_before: datetime | str | None = None,
        fusion: SearchFusion | None = None,
        reranker: RerankerChoice = "default",
        progress: Progress | None = None,
    ) -> SearchPage:
        """Hybrid retrieval over the head revision, then the runtime's reranker if one is configured.

        ``reranker``: ``"default"`` (the runtime's, if any), ``"none"`` (the coarse page even when the runtime has a
        reranker) or a reranker for this call (e.g. the CLI's ``--rerank``). ``progress`` receives (done, total) from
        per-candidate rerankers. A query text takes the :class:`SearchMemoryRequest`'s other fields as keywords
        (``search("release day", mode="fts", limit=5)``).

        Returns a :class:`SearchPage` (no hits and ``memory`` ``None`` for a scope with no memory). Raises
        InputError for a bad request, CapabilityNotSupportedError for an explicit mode the store cannot run,
        EmbeddingError when embedding the query fails (except in auto mode), InferenceError / RerankError when the
        reranker fails (rerank fails closed), StoreError.
        """
        request = arguments.search_request(request, {
            "limit": limit, "mode": mode, "kinds": kinds, "metadata": metadata, "created_from": created_from,
            "created_before": created_before, "fusion": fusion})
        return self._parts.search.search_with_choice((self.scope,), request, reranker_choice(reranker), progress)

    def recent(self, request: RecentRequest | None = None, *, limit: int | None = None,
               since: datetime | str | None = None) -> RecentPage:
        """The newest active entries (last remembered, revised or reactivated first), at most ``limit`` (default
        20), optionally only those written at or after ``since``; or as a :class:`RecentRequest` says.

        Reads the scope's latest revisions back (:mod:`pcmem.memory.recent`), not its whole manifest. Returns a
        :class:`RecentPage` (empty for a scope with no memory). Raises InputError for bad values, StoreError.
        """
        request = arguments.request_of(RecentRequest, request, "recent", None, {"limit": limit, "since": since})
        return recent_page(self._backend, [self.head()], request.limit, request.since)

    def context(self, request: ContextRequest | str | None = None, *, max_bytes: int | None = None,
                max_tokens: int | None = None, relevant: int | None = None, recent: int | None = None,
                kinds: Sequence[str] | None = None, mode: SearchMode | None = None, explain: bool | None = None,
                reranker: RerankerChoice = "default") -> ContextBlock:
        """A prompt-ready block of this scope's memory under a budget: the entries relevant to the query (a
        search) and the newest ones, each once, with citations (:mod:`pcmem.memory.context_block`). A query text
        takes the :class:`ContextRequest`'s other fields as keywords (``context("deploy day", max_bytes=2000)``);
        ``None`` packs the newest entries only.

        Returns a :class:`ContextBlock` whose text never exceeds ``max_bytes`` nor ``max_tokens`` (as
        :func:`~pcmem.types.context.estimate_tokens` counts). Raises as :meth:`search`, and InputError for bad values.
        """
        request = arguments.context_request(request, {"max_bytes": max_bytes, "max_tokens": max_tokens,
                                             "relevant": relevant, "recent": recent, "kinds": kinds, "mode": mode,
                                             "explain": explain})
        choice = reranker_choice(reranker)
        return context_block.build(
            request, search=lambda query: self._parts.search.search_with_choice((self.scope,), query, choice, None),
            recent=lambda n: recent_page(self._backend, [self.head()], n),
            versions=self._backend.entry_versions)

