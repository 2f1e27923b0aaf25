"""The async Memory API in the RFC's shape: ``await runtime.memory.for_scope("project").remember(...)``.

Each method runs its synchronous counterpart (:class:`~pcmem.memory.scoped.SyncScopedMemory`) in a worker thread,
so an event loop (a desktop app, the TUI) never blocks on the store.
"""

from __future__ import annotations

import asyncio
import builtins

from pcmem.memory.scoped import MemoryParts, SyncScopedMemory
from pcmem.rerank.port import MemoryReranker
from pcmem.types.memory import (
    ChangesPage,
    Citation,
    EntryHistory,
    EntryPage,
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
    WriteResult,
)
from pcmem.types.progress import Progress
from pcmem.types.search import SearchMemoryRequest, SearchPage


class SyncMemoryService:
    """Blocking access to every scope of one store."""

    def __init__(self, parts: MemoryParts) -> None:
        self.parts = parts

    def for_scope(self, scope: str) -> SyncScopedMemory:
        return SyncScopedMemory(self.parts, scope)

    def scopes(self) -> list[ScopeSummary]:
        """Every scope that has a memory, with counts at its head."""
        return self.parts.backend.scope_summaries()


class ScopedMemory:
    """Async operations on one scope; see :class:`~pcmem.memory.scoped.SyncScopedMemory` for the semantics."""

    def __init__(self, sync: SyncScopedMemory) -> None:
        self.sync = sync
        self.scope = sync.scope

    async def head(self) -> MemoryRef | None:
        return await asyncio.to_thread(self.sync.head)

    async def remember(self, request: RememberRequest | NewEntry | str) -> WriteResult:
        return await asyncio.to_thread(self.sync.remember, request)

    async def revise(self, request: ReviseRequest) -> WriteResult:
        return await asyncio.to_thread(self.sync.revise, request)

    async def retire(self, request: RetireRequest) -> WriteResult:
        return await asyncio.to_thread(self.sync.retire, request)

    async def reactivate(self, request: ReactivateRequest) -> WriteResult:
        return await asyncio.to_thread(self.sync.reactivate, request)

    async def list(self, request: ListRequest | None = None) -> EntryPage:
        return await asyncio.to_thread(self.sync.list, request)

    async def get(self, citation: Citation) -> MemoryEntry:
        return await asyncio.to_thread(self.sync.get, citation)

    async def get_entry(self, entry_id: str, revision: int | None = None) -> MemoryEntry:
        return await asyncio.to_thread(self.sync.get_entry, entry_id, revision)

    async def changes(self, since_revision: int = 0) -> ChangesPage:
        return await asyncio.to_thread(self.sync.changes, since_revision)

    async def history(self, entry_id: str) -> EntryHistory:
        return await asyncio.to_thread(self.sync.history, entry_id)

    async def revisions(self) -> builtins.list[RevisionInfo]:
        return await asyncio.to_thread(self.sync.revisions)

    async def search(
        self,
        request: SearchMemoryRequest | str,
        *,
        reranker: MemoryReranker | None = None,
        rerank: bool = True,
        progress: Progress | None = None,
    ) -> SearchPage:
        return await asyncio.to_thread(self.sync.search, request, reranker=reranker, rerank=rerank, progress=progress)


class MemoryService:
    """Async access to every scope of one store."""

    def __init__(self, sync: SyncMemoryService) -> None:
        self.sync = sync

    def for_scope(self, scope: str) -> ScopedMemory:
        return ScopedMemory(self.sync.for_scope(scope))

    async def scopes(self) -> list[ScopeSummary]:
        return await asyncio.to_thread(self.sync.scopes)
