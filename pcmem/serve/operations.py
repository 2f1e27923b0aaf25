"""The operations both transports serve (HTTP v1 + ``/x/pcmem``, and the MCP tools), over one open runtime.

Every store or model call runs in a worker thread, never on the event loop. Searches that may rerank get their own
small pool, so slow reranks (bounded by the RFC's generation timeout) never take the threads other requests need.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

import pcmem
from pcmem.errors import CapabilityNotSupportedError, RevisionNotFoundError, ScopeNotFoundError
from pcmem.serve import convert, wire
from pcmem.serve.errors import ApiError

T = TypeVar("T")

#: Threads for store reads and writes (16 concurrent clients is the load the bench drives).
STORE_THREADS = 16
#: Threads for searches that may run a local model; a third request waits rather than starving the store threads.
RERANK_THREADS = 2


class ScopedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scope_id: wire.ScopeId


class EntryHistoryRequest(ScopedRequest):
    entry_id: wire.RefId = Field(description="The entry id (from a citation's entry_id).")


class TracedSearchRequest(wire.SearchMemoryRequest):
    rerank: bool = Field(default=True, description="Run the configured reranker (when there is one).")


class Readiness(BaseModel):
    status: str
    store: str
    embedder: str | None
    rerank_policy: str | None
    generation_model: str | None
    models_loaded: list[str]
    pcmem_version: str


class MemoryApi:
    """PowerContext's Memory operations and pcmem's additions on one :class:`pcmem.SyncRuntime`."""

    def __init__(self, runtime: pcmem.SyncRuntime, store: str | Path) -> None:
        self.runtime = runtime
        self.store = str(store)
        self._store_pool = ThreadPoolExecutor(STORE_THREADS, thread_name_prefix="pcmem-store")
        self._rerank_pool = ThreadPoolExecutor(RERANK_THREADS, thread_name_prefix="pcmem-rerank")
        #: Operations awaiting their thread now (a stopping server waits for them, see pcmem.serve.shutdown).
        self.running = 0

    def close(self) -> None:
        """Wait for the calls already running (their writes complete); calls still queued are dropped: their
        requests were cancelled, so nothing was acknowledged."""
        self._store_pool.shutdown(wait=True, cancel_futures=True)
        self._rerank_pool.shutdown(wait=True, cancel_futures=True)

    async def _run(self, call: Callable[[], T], *, may_rerank: bool = False) -> T:
        pool = self._rerank_pool if may_rerank and self.runtime.reranker is not None else self._store_pool
        self.running += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, call)
        finally:
            self.running -= 1

    def _scope(self, scope_id: str):  # noqa: ANN202 - pcmem's scoped handle
        return self.runtime.memory.for_scope(scope_id)

    # --- PowerContext v1 --------------------------------------------------------------------------------------

    async def search_memory(self, request: wire.SearchMemoryRequest) -> wire.SearchMemoryResponse:
        page = await self._search(request, rerank=True)
        return convert.search_response(page)

    async def search_traced(self, request: TracedSearchRequest) -> pcmem.SearchPage:
        return await self._search(request, rerank=request.rerank)

    async def _search(self, request: wire.SearchMemoryRequest, *, rerank: bool) -> pcmem.SearchPage:
        query = pcmem.SearchMemoryRequest(query=request.query, limit=request.limit, mode=request.mode.value)
        scoped = self._scope(request.scope_id)
        try:
            return await self._run(lambda: scoped.search(query, rerank=rerank), may_rerank=rerank)
        except CapabilityNotSupportedError as error:
            raise ApiError(422, "capability_not_supported", str(error), {"capability": request.mode.value}) from None

    async def remember_memory(self, request: wire.RememberMemoryRequest) -> wire.MemoryMutationResponse:
        metadata = {"reason": request.reason} if request.reason else {}
        remember = pcmem.RememberRequest(
            entries=(pcmem.NewEntry(text=request.text, kind=request.kind, metadata=metadata),),
            expected_revision=request.expected_revision,
        )
        scoped = self._scope(request.scope_id)

        def write() -> wire.MemoryMutationResponse:
            result = scoped.remember(remember)
            return self._mutation(scoped, result)

        return await self._run(write)

    async def list_memory_entries(self, request: wire.ListMemoryEntriesRequest) -> wire.ListMemoryEntriesResponse:
        scoped = self._scope(request.scope_id)
        listing = pcmem.ListRequest(state="all" if request.include_inactive else "active")

        def read() -> pcmem.EntryPage | None:
            try:
                return scoped.list(listing)
            except ScopeNotFoundError:
                return None  # PowerContext: a scope without Memory lists nothing (memory: null)

        return convert.entries_response(await self._run(read))

    async def get_memory_entry(self, request: wire.GetMemoryEntryRequest) -> wire.MemoryEntry:
        scoped = self._scope(request.scope_id)
        cited = _pcmem_citation(request.citation)
        return convert.memory_entry(await self._run(lambda: scoped.get(cited)))

    async def revise_memory_entry(self, request: wire.ReviseMemoryEntryRequest) -> wire.MemoryMutationResponse:
        scoped = self._scope(request.scope_id)
        cited = _pcmem_citation(request.citation)

        def write() -> wire.MemoryMutationResponse:
            current = _active(scoped.get(cited))
            metadata = {**current.entry.metadata, "reason": request.reason} if request.reason else None
            result = scoped.revise(pcmem.ReviseRequest(
                entry_id=cited.entry_id, expected_revision=cited.revision, text=request.text, kind=request.kind,
                metadata=metadata,
            ))
            return self._mutation(scoped, result)

        return await self._run(write)

    async def retire_memory_entry(self, request: wire.RetireMemoryEntryRequest) -> wire.MemoryMutationResponse:
        scoped = self._scope(request.scope_id)
        cited = _pcmem_citation(request.citation)

        def write() -> wire.MemoryMutationResponse:
            _active(scoped.get(cited))
            result = scoped.retire(pcmem.RetireRequest(entry_id=cited.entry_id, expected_revision=cited.revision))
            return self._mutation(scoped, result)

        return await self._run(write)

    async def list_memory_changes(self, request: wire.ListMemoryChangesRequest) -> wire.ListMemoryChangesResponse:
        scoped = self._scope(request.scope_id)
        since = request.since_revision or 0

        def previous_version(entry_id: str, revision: int) -> str | None:
            return scoped.get_entry(entry_id, revision - 1).entry.entry_version_id

        def read() -> wire.ListMemoryChangesResponse:
            try:
                page = scoped.changes(since)
            except ScopeNotFoundError:
                if since > 0:
                    raise ApiError(422, "invalid_request", f"since_revision {since} does not exist: the scope has "
                                   "no Memory yet") from None
                page = None
            except RevisionNotFoundError as error:
                raise ApiError(422, "invalid_request", str(error)) from None
            return convert.changes_response(page, previous_version)

        return await self._run(read)

    def _mutation(self, scoped: Any, result: pcmem.WriteResult) -> wire.MemoryMutationResponse:
        entry = convert.memory_entry(scoped.get(result.citations[0])) if result.citations else None
        return wire.MemoryMutationResponse(memory=convert.memory_reference(result.memory), entry=entry)

    # --- pcmem additions --------------------------------------------------------------------------------------

    async def list_scopes(self) -> list[pcmem.ScopeSummary]:
        return await self._run(self.runtime.memory.scopes)

    async def entry_history(self, request: EntryHistoryRequest) -> pcmem.EntryHistory:
        scoped = self._scope(request.scope_id)
        return await self._run(lambda: scoped.history(request.entry_id))

    def readiness(self) -> Readiness:
        embedder = self.runtime.embedder
        reranker = self.runtime.reranker
        generation_model = self.runtime.inference.generation_model if reranker is not None else None
        loaded = [name for name in (embedder.profile.model_id if embedder else None, generation_model) if name]
        return Readiness(
            status="ready", store=self.store, embedder=embedder.profile.model_id if embedder else None,
            rerank_policy=getattr(reranker, "policy_id", None), generation_model=generation_model,
            models_loaded=loaded, pcmem_version=pcmem.__version__,
        )


def _pcmem_citation(value: wire.MemoryCitation) -> pcmem.Citation:
    cited = convert.pcmem_citation(value)
    if cited is None:
        raise ApiError(404, "memory_not_found", f"family {value.memory_ref.family!r} is not a Memory artifact")
    return cited


def _active(entry: pcmem.MemoryEntry) -> pcmem.MemoryEntry:
    if entry.state != "active":
        raise ApiError(409, "memory_entry_inactive", f"entry {entry.citation.entry_id!r} is inactive")
    return entry
