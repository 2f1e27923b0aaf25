"""The async Memory API in the RFC's shape: ``await runtime.memory.for_scope("project").remember(...)``.

Each method runs its synchronous counterpart (:class:`~pcmem.memory.scoped.SyncScopedMemory`) in a worker thread,
so an event loop (a desktop app, the TUI) never blocks on the store.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar

from pcmem.errors import InputError
from pcmem.memory import arguments, context_block
from pcmem.memory.recent import recent_page
from pcmem.memory.scoped import MemoryParts, SyncScopedMemory
from pcmem.native_calls import entry_points
from pcmem.rerank.choice import RerankerChoice, chosen_reranker
from pcmem.settings import SearchFusion
from pcmem.types.context import ContextBlock, ContextRequest, RecentPage, RecentRequest
from pcmem.types.memory import (
    ChangesPage,
    ChangesRequest,
    Citation,
    EntryHistory,
    EntryPage,
    EntryRequest,
    ForgetRequest,
    HistoryRequest,
    ListRequest,
    MemoryEntry,
    MemoryRef,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    RevisionInfo,
    ScopeSummary,
    Tombstone,
    WriteResult,
)
from pcmem.types.progress import Progress
from pcmem.types.search import FusionDefault, SearchMemoryRequest, SearchMode, SearchPage, WarmReport
from pcmem.validation import validate_scope

T = TypeVar("T")


async def to_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread``, with asyncio imported on first use: a CLI call uses the blocking API only, and
    importing asyncio costs it 20-50 ms."""
    import asyncio

    return await asyncio.to_thread(function, *args, **kwargs)


@entry_points  # each call counts as one native call: see pcmem.native_calls
class SyncMemoryService:
    """Blocking access to every scope of one store."""

    def __init__(self, parts: MemoryParts) -> None:
        self.parts = parts

    def for_scope(self, scope: str) -> SyncScopedMemory:
        """A handle on one scope (cheap; nothing is read). Raises InputError for an invalid scope name."""
        return SyncScopedMemory(self.parts, scope)

    def scopes(self) -> list[ScopeSummary]:
        """Every scope that has a memory, with counts at its head. Raises StoreError."""
        return self.parts.backend.scope_summaries()

    def forget_scope(self, scope: str, *, idempotency_key: str | None = None) -> WriteResult:
        """Erase every entry of ``scope`` for good: ``for_scope(scope).forget_scope()`` (see there; it raises what
        that raises). Cannot be undone."""
        return self.for_scope(scope).forget_scope(idempotency_key=idempotency_key)

    def warm(self, scopes: Sequence[str] = ()) -> WarmReport:
        """Load now what the first search of each of ``scopes`` would load: the embedding model (one query
        embedding) and each scope's search views. :meth:`SyncRuntime.warm <pcmem.SyncRuntime.warm>` does the same
        a step at a time, with progress and cancellation. Returns a :class:`WarmReport`; raises InputError (a scope
        name), EmbeddingError or ConfigurationError (the model cannot load), StoreError."""
        if isinstance(scopes, str):
            raise InputError("scopes takes a list of scope names, not one string")
        names = tuple(dict.fromkeys(validate_scope(scope) for scope in scopes))
        search = self.parts.search
        profile = search.load_embedder()
        loaded = tuple(name for name in names if search.warm(name))
        return WarmReport(model=profile.model_id if profile is not None else None, scopes=loaded,
                          empty_scopes=tuple(name for name in names if name not in loaded))

    def search_fusion(self) -> FusionDefault:
        """The fusion a search that does not choose one runs, why, and the store's own default. Raises StoreError."""
        fusion, source = self.parts.search.default_fusion()
        return FusionDefault(fusion=fusion, source=source, store_default=self.parts.backend.search_fusion_default())

    def set_search_fusion(self, fusion: SearchFusion | None) -> FusionDefault:
        """Keep ``fusion`` in the store as the default of every search that does not choose one and runs where
        ``PCMEM_SEARCH_FUSION`` is unset, in every process (``None`` removes it: the contract's rrf). Raises
        InputError for an unknown name, StoreReadOnlyError, StoreError."""
        self.parts.backend.set_search_fusion_default(arguments.fusion_of(fusion))
        return self.search_fusion()

    def search(
        self,
        request: SearchMemoryRequest | str,
        *,
        scopes: Sequence[str],
        limit: int | None = None,
        mode: SearchMode | None = None,
        kinds: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        created_from: datetime | str | None = None,
        created_before: datetime | str | None = None,
        fusion: SearchFusion | None = None,
        reranker: RerankerChoice | None = "default",
        rerank: bool | None = None,
        progress: Progress | None = None,
    ) -> SearchPage:
        """Search several scopes in one call: one RRF over the union of their candidates (guide: "Search and fusion").

        Each hit keeps the exact citation of its own scope's head; ``page.memories`` lists every scope searched
        that has a memory. Scopes with no memory contribute nothing. Returns a :class:`SearchPage`; raises as
        :meth:`SyncScopedMemory.search`, and InputError for an empty or duplicated ``scopes``.
        """
        request = arguments.search_request(request, {
            "limit": limit, "mode": mode, "kinds": kinds, "metadata": metadata, "created_from": created_from,
            "created_before": created_before, "fusion": fusion})
        names = arguments.scopes_of(scopes)
        return self.parts.search.chosen(names, request, chosen_reranker(reranker, rerank), progress)

    def recent(self, request: RecentRequest | None = None, *, scopes: Sequence[str], limit: int | None = None,
               since: datetime | str | None = None) -> RecentPage:
        """The newest active entries of several scopes together, newest write first (see
        :meth:`SyncScopedMemory.recent`). Raises as that does, and InputError for an empty or duplicated ``scopes``."""
        request = arguments.request_of(RecentRequest, request, "recent", None, {"limit": limit, "since": since})
        heads = [self.parts.backend.find_memory(scope) for scope in arguments.scopes_of(scopes)]
        return recent_page(self.parts.backend, heads, request.limit, request.since)

    def context(self, request: ContextRequest | str | None = None, *, scopes: Sequence[str],
                max_bytes: int | None = None, max_tokens: int | None = None, relevant: int | None = None,
                recent: int | None = None, kinds: Sequence[str] | None = None, mode: SearchMode | None = None,
                explain: bool | None = None, reranker: RerankerChoice = "default") -> ContextBlock:
        """A context block over several scopes: one search over them all and their newest entries together (see
        :meth:`SyncScopedMemory.context`). Raises as that does, and InputError for an empty or duplicated
        ``scopes``."""
        request = arguments.context_request(request, {"max_bytes": max_bytes, "max_tokens": max_tokens,
                                             "relevant": relevant, "recent": recent, "kinds": kinds, "mode": mode,
                                             "explain": explain})
        names = arguments.scopes_of(scopes)
        choice = chosen_reranker(reranker, None)
        backend = self.parts.backend
        return context_block.build(
            request, search=lambda query: self.parts.search.chosen(names, query, choice, None),
            recent=lambda n: recent_page(backend, [backend.find_memory(scope) for scope in names], n),
            versions=backend.entry_versions)


class ScopedMemory:
    """Async operations on one scope; see :class:`~pcmem.memory.scoped.SyncScopedMemory` for the semantics."""

    def __init__(self, sync: SyncScopedMemory) -> None:
        self.sync = sync
        self.scope = sync.scope

    async def head(self) -> MemoryRef | None:
        """As :meth:`SyncScopedMemory.head` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.head)

    async def remember(
        self,
        request: RememberRequest | NewEntry | str,
        *,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        entry_id: str | None = None,
        upsert: bool = False,
        allow_duplicates: bool = False,
        expected_revision: int | None = None,
        reason: str | None = None,
        idempotency_key: str | None = None,
    ) -> WriteResult:
        """As :meth:`SyncScopedMemory.remember`. Cancellation: the write runs in a worker thread that cannot be
        interrupted, so a ``remember`` cancelled while it runs may still commit — the caller gets CancelledError
        and the entries exist. Give it an ``idempotency_key`` and send it again with the same key after a
        cancellation: it is applied once and the second call returns the first outcome."""
        return await to_thread(self.sync.remember, request, kind=kind, metadata=metadata, entry_id=entry_id,
                               upsert=upsert, allow_duplicates=allow_duplicates,
                               expected_revision=expected_revision, reason=reason, idempotency_key=idempotency_key)

    async def forget(self, entry_id: str | ForgetRequest, *, idempotency_key: str | None = None) -> WriteResult:
        """As :meth:`SyncScopedMemory.forget` (cannot be undone)."""
        return await to_thread(self.sync.forget, entry_id, idempotency_key=idempotency_key)

    async def forget_scope(self, *, idempotency_key: str | None = None) -> WriteResult:
        """As :meth:`SyncScopedMemory.forget_scope` (cannot be undone)."""
        return await to_thread(self.sync.forget_scope, idempotency_key=idempotency_key)

    async def tombstone(self, entry_id: str) -> Tombstone | None:
        """As :meth:`SyncScopedMemory.tombstone` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.tombstone, entry_id)

    async def revise(self, request: ReviseRequest | str, *, text: str | None = None, kind: str | None = None,
                     metadata: dict[str, Any] | None = None, expected_revision: int | None = None,
                     expected_version: int | None = None, reason: str | None = None,
                     idempotency_key: str | None = None) -> WriteResult:
        """As :meth:`SyncScopedMemory.revise` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.revise, request, text=text, kind=kind, metadata=metadata,
                               expected_revision=expected_revision, expected_version=expected_version, reason=reason,
                               idempotency_key=idempotency_key)

    async def retire(self, request: RetireRequest | str, *, expected_revision: int | None = None,
                     expected_version: int | None = None, reason: str | None = None,
                     idempotency_key: str | None = None) -> WriteResult:
        """As :meth:`SyncScopedMemory.retire` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.retire, request, expected_revision=expected_revision,
                               expected_version=expected_version, reason=reason, idempotency_key=idempotency_key)

    async def reactivate(self, request: ReactivateRequest | str, *, expected_revision: int | None = None,
                         expected_version: int | None = None, reason: str | None = None,
                         idempotency_key: str | None = None) -> WriteResult:
        """As :meth:`SyncScopedMemory.reactivate` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.reactivate, request, expected_revision=expected_revision,
                               expected_version=expected_version, reason=reason, idempotency_key=idempotency_key)

    async def list(self, request: ListRequest | None = None, *, state: Literal["active", "all"] | None = None,
                   revision: int | None = None, limit: int | None = None, cursor: str | None = None) -> EntryPage:
        """As :meth:`SyncScopedMemory.list` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.list, request, state=state, revision=revision, limit=limit, cursor=cursor)

    async def get(self, citation: Citation) -> MemoryEntry:
        """As :meth:`SyncScopedMemory.get` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.get, citation)

    async def get_entry(self, entry_id: str | EntryRequest, revision: int | None = None) -> MemoryEntry:
        """As :meth:`SyncScopedMemory.get_entry` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.get_entry, entry_id, revision)

    async def changes(self, since_revision: int | ChangesRequest = 0, *, limit: int | None = None,
                      cursor: str | None = None) -> ChangesPage:
        """As :meth:`SyncScopedMemory.changes` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.changes, since_revision, limit=limit, cursor=cursor)

    async def history(self, entry_id: str | HistoryRequest) -> EntryHistory:
        """As :meth:`SyncScopedMemory.history` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.history, entry_id)

    async def revisions(self) -> builtins.list[RevisionInfo]:
        """As :meth:`SyncScopedMemory.revisions` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.revisions)

    async def recent(self, request: RecentRequest | None = None, *, limit: int | None = None,
                     since: datetime | str | None = None) -> RecentPage:
        """As :meth:`SyncScopedMemory.recent` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.recent, request, limit=limit, since=since)

    async def context(self, request: ContextRequest | str | None = None, *, max_bytes: int | None = None,
                      max_tokens: int | None = None, relevant: int | None = None, recent: int | None = None,
                      kinds: Sequence[str] | None = None, mode: SearchMode | None = None,
                      explain: bool | None = None, reranker: RerankerChoice = "default") -> ContextBlock:
        """As :meth:`SyncScopedMemory.context` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.context, request, max_bytes=max_bytes, max_tokens=max_tokens,
                               relevant=relevant, recent=recent, kinds=kinds, mode=mode, explain=explain,
                               reranker=reranker)

    async def search(
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
        reranker: RerankerChoice | None = "default",
        rerank: bool | None = None,
        progress: Progress | None = None,
    ) -> SearchPage:
        """As :meth:`SyncScopedMemory.search` (runs in a worker thread): same result, same errors."""
        choice = chosen_reranker(reranker, rerank)  # here: the deprecation warning points at the caller's line
        return await to_thread(self.sync.search, request, limit=limit, mode=mode, kinds=kinds, metadata=metadata,
                               created_from=created_from, created_before=created_before, fusion=fusion,
                               reranker=choice, progress=progress)


class MemoryService:
    """Async access to every scope of one store."""

    def __init__(self, sync: SyncMemoryService) -> None:
        self.sync = sync

    def for_scope(self, scope: str) -> ScopedMemory:
        """A handle on one scope (cheap; nothing is read). Raises InputError for an invalid scope name."""
        return ScopedMemory(self.sync.for_scope(scope))

    async def forget_scope(self, scope: str, *, idempotency_key: str | None = None) -> WriteResult:
        """As :meth:`SyncMemoryService.forget_scope` (cannot be undone)."""
        return await to_thread(self.sync.forget_scope, scope, idempotency_key=idempotency_key)

    async def scopes(self) -> list[ScopeSummary]:
        """As :meth:`SyncMemoryService.scopes` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.scopes)

    async def warm(self, scopes: Sequence[str] = ()) -> WarmReport:
        """As :meth:`SyncMemoryService.warm` (runs in a worker thread)."""
        return await to_thread(self.sync.warm, scopes)

    async def search_fusion(self) -> FusionDefault:
        """As :meth:`SyncMemoryService.search_fusion` (runs in a worker thread)."""
        return await to_thread(self.sync.search_fusion)

    async def recent(self, request: RecentRequest | None = None, *, scopes: Sequence[str],
                     limit: int | None = None, since: datetime | str | None = None) -> RecentPage:
        """As :meth:`SyncMemoryService.recent` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.recent, request, scopes=scopes, limit=limit, since=since)

    async def context(self, request: ContextRequest | str | None = None, *, scopes: Sequence[str],
                      max_bytes: int | None = None, max_tokens: int | None = None, relevant: int | None = None,
                      recent: int | None = None, kinds: Sequence[str] | None = None, mode: SearchMode | None = None,
                      explain: bool | None = None, reranker: RerankerChoice = "default") -> ContextBlock:
        """As :meth:`SyncMemoryService.context` (runs in a worker thread): same result, same errors."""
        return await to_thread(self.sync.context, request, scopes=scopes, max_bytes=max_bytes,
                               max_tokens=max_tokens, relevant=relevant, recent=recent, kinds=kinds, mode=mode,
                               explain=explain, reranker=reranker)

    async def set_search_fusion(self, fusion: SearchFusion | None) -> FusionDefault:
        """As :meth:`SyncMemoryService.set_search_fusion` (runs in a worker thread)."""
        return await to_thread(self.sync.set_search_fusion, fusion)

    async def search(
        self,
        request: SearchMemoryRequest | str,
        *,
        scopes: Sequence[str],
        limit: int | None = None,
        mode: SearchMode | None = None,
        kinds: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        created_from: datetime | str | None = None,
        created_before: datetime | str | None = None,
        fusion: SearchFusion | None = None,
        reranker: RerankerChoice | None = "default",
        rerank: bool | None = None,
        progress: Progress | None = None,
    ) -> SearchPage:
        """As :meth:`SyncMemoryService.search`: several scopes, one RRF (runs in a worker thread)."""
        choice = chosen_reranker(reranker, rerank)  # here: the deprecation warning points at the caller's line
        return await to_thread(self.sync.search, request, scopes=scopes, limit=limit, mode=mode, kinds=kinds,
                               metadata=metadata, created_from=created_from, created_before=created_before,
                               fusion=fusion, reranker=choice, progress=progress)
