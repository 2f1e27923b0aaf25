"""The Memory API over every scope of a store, blocking (:class:`SyncMemoryService`) and async (the RFC's shape:
``await runtime.memory.for_scope("project").remember(...)``).

Each async method runs its sync counterpart in a worker thread (:mod:`pcmem.memory.awaited`), so an event loop (a
desktop app, the TUI) never blocks on the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pcmem.errors import InputError
from pcmem.memory import arguments, context_block
from pcmem.memory.awaited import in_worker
from pcmem.memory.recent import recent_page
from pcmem.memory.scoped import RuntimeShared, SyncScopedMemory
from pcmem.native_calls import entry_points
from pcmem.rerank.choice import RerankerChoice, reranker_choice
from pcmem.settings import SearchFusion
from pcmem.types.context import ContextBlock, ContextRequest, RecentPage, RecentRequest
from pcmem.types.memory import (
    ScopeSummary,
    WriteResult,
)
from pcmem.types.progress import Progress
from pcmem.types.search import FusionDefault, SearchMemoryRequest, SearchMode, SearchPage, WarmReport
from pcmem.validation import validate_scope


@entry_points  # each call counts as one native call: see pcmem.native_calls
class SyncMemoryService:
    """Blocking access to every scope of one store."""

    def __init__(self, parts: RuntimeShared) -> None:
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
        reranker: RerankerChoice = "default",
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
        return self.parts.search.search_with_choice(names, request, reranker_choice(reranker), progress)

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
        choice = reranker_choice(reranker)
        backend = self.parts.backend
        return context_block.build(
            request, search=lambda query: self.parts.search.search_with_choice(names, query, choice, None),
            recent=lambda n: recent_page(backend, [backend.find_memory(scope) for scope in names], n),
            versions=backend.entry_versions)


class ScopedMemory:
    """Async operations on one scope: each method is :class:`~pcmem.memory.scoped.SyncScopedMemory`'s (the same
    parameters, result and errors), run in a worker thread (see :mod:`pcmem.memory.awaited`)."""

    def __init__(self, sync: SyncScopedMemory) -> None:
        self.sync = sync
        self.scope = sync.scope

    head = in_worker(SyncScopedMemory.head)
    remember = in_worker(SyncScopedMemory.remember, note=(
        "Cancellation: the write runs in a worker thread that cannot be interrupted, so a ``remember`` cancelled "
        "while it runs may still commit — the caller gets CancelledError and the entries exist. Give it an "
        "``idempotency_key`` and send it again with the same key after a cancellation: it is applied once and the "
        "second call returns the first outcome."))
    revise = in_worker(SyncScopedMemory.revise)
    retire = in_worker(SyncScopedMemory.retire)
    reactivate = in_worker(SyncScopedMemory.reactivate)
    forget = in_worker(SyncScopedMemory.forget, note="Cannot be undone.")
    forget_scope = in_worker(SyncScopedMemory.forget_scope, note="Cannot be undone.")
    tombstone = in_worker(SyncScopedMemory.tombstone)
    list = in_worker(SyncScopedMemory.list)
    get = in_worker(SyncScopedMemory.get)
    get_entry = in_worker(SyncScopedMemory.get_entry)
    changes = in_worker(SyncScopedMemory.changes)
    history = in_worker(SyncScopedMemory.history)
    revisions = in_worker(SyncScopedMemory.revisions)
    recent = in_worker(SyncScopedMemory.recent)
    context = in_worker(SyncScopedMemory.context)
    search = in_worker(SyncScopedMemory.search)


class MemoryService:
    """Async access to every scope of one store: each method is :class:`SyncMemoryService`'s, run in a worker
    thread (see :mod:`pcmem.memory.awaited`)."""

    def __init__(self, sync: SyncMemoryService) -> None:
        self.sync = sync

    def for_scope(self, scope: str) -> ScopedMemory:
        """A handle on one scope (cheap; nothing is read). Raises InputError for an invalid scope name."""
        return ScopedMemory(self.sync.for_scope(scope))

    scopes = in_worker(SyncMemoryService.scopes)
    forget_scope = in_worker(SyncMemoryService.forget_scope, note="Cannot be undone.")
    warm = in_worker(SyncMemoryService.warm)
    search_fusion = in_worker(SyncMemoryService.search_fusion)
    set_search_fusion = in_worker(SyncMemoryService.set_search_fusion)
    recent = in_worker(SyncMemoryService.recent)
    context = in_worker(SyncMemoryService.context)
    search = in_worker(SyncMemoryService.search)
