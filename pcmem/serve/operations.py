"""The operations both transports serve (HTTP v1 + ``/x/pcmem``, and the MCP tools), over one open runtime.

Every store or model call runs in a worker thread, never on the event loop. Searches that may rerank get their own
small pool, so slow reranks (bounded by the RFC's generation timeout) never take the threads other requests need.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import unicodedata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

import pcmem
from pcmem.errors import CapabilityNotSupportedError, EntryNotFoundError, RevisionNotFoundError
from pcmem.serve import convert, wire
from pcmem.serve.errors import ApiError
from pcmem.settings import SearchFusion
from pcmem.types.search import MAX_SEARCH_LIMIT, FusionDefault
from pcmem.validation import validate_id

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
    fusion: SearchFusion | None = Field(
        default=None, description="rrf (the contract's), convex or weighted-rrf (non-contract); default: the server's "
                                  "PCMEM_SEARCH_FUSION, else the store's default (GET /x/pcmem/fusion), else rrf.")


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

    async def run(self, call: Callable[[], T], *, may_rerank: bool = False) -> T:
        """Run a store (or, with ``may_rerank``, a reranking search) call in a worker thread."""
        pool = self._rerank_pool if may_rerank and self.runtime.reranker is not None else self._store_pool
        self.running += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, call)
        finally:
            self.running -= 1

    def scope(self, scope_id: str):  # noqa: ANN201 - pcmem's scoped handle
        return self.runtime.memory.for_scope(scope_id)


    # --- PowerContext v1 (1.4.1's memory family) --------------------------------------------------------------

    async def search_memory(self, request: wire.SearchMemoryRequest) -> wire.SearchMemoryResponse:
        scoped = self.scope(request.scope_id)

        def read() -> wire.SearchMemoryResponse:
            page = self._search_page(scoped, request, rerank=True)
            hits = []
            for hit in page.hits:
                shown, record = _shown(scoped, hit)
                if convert.tags_match(shown, request.tag_filter):
                    hits.append(wire.AtomicMemorySearchHit(
                        memory=record, score=hit.score,
                        matched_by=[wire.MemoryMatchedBy(_TEXT.get(c, c)) for c in hit.matched_by]))
            return wire.SearchMemoryResponse(mode=wire.MemoryUsedSearchMode(_TEXT.get(page.mode, page.mode)),
                                             hits=hits[: request.limit])

        return await self.run(read, may_rerank=True)

    async def search_traced(self, request: TracedSearchRequest) -> pcmem.SearchPage:
        scoped = self.scope(request.scope_id)
        return await self.run(lambda: self._search_page(scoped, request, rerank=request.rerank,
                                                        fusion=request.fusion), may_rerank=True)

    async def search_fusion(self) -> FusionDefault:
        """The fusion a search that does not choose runs, why, and the store's own default."""
        return await self.run(self.runtime.memory.search_fusion)

    def _search_page(self, scoped: Any, request: wire.SearchMemoryRequest, *, rerank: bool,
                     fusion: SearchFusion | None = None) -> pcmem.SearchPage:
        # A tag filter is applied to the hits, so ask for the most hits a search gives and cut after filtering.
        limit = MAX_SEARCH_LIMIT if request.tag_filter is not None else request.limit
        query = pcmem.SearchMemoryRequest(query=request.query, limit=limit, mode=request.mode.value, fusion=fusion)
        try:
            return scoped.search(query, reranker="default" if rerank else "none")
        except CapabilityNotSupportedError as error:
            raise ApiError(422, "capability_not_supported", str(error), {"capability": request.mode.value}) from None

    async def remember_memory(self, request: wire.RememberMemoryRequest, *,
                              idempotency_key: str | None = None) -> wire.MemoryMutationResponse:
        """``idempotency_key`` (the Idempotency-Key header): the same write sent again is answered, not applied
        again (:mod:`pcmem.memory.write_records`); its records are read again for the answer."""
        remember = pcmem.RememberRequest(
            entries=(pcmem.NewEntry(text=request.text, kind=request.kind),),
            expected_revision=request.expected_revision, reason=request.reason,
        )
        scoped = self.scope(request.scope_id)
        return await self.run(lambda: self._mutation(scoped, scoped.remember(remember,
                                                                            idempotency_key=idempotency_key)))

    async def list_memory_entries(self, request: wire.ListMemoryEntriesRequest) -> wire.ListMemoryEntriesResponse:
        scoped = self.scope(request.scope_id)
        listing = pcmem.ListRequest(state="all" if request.include_inactive else "active", limit=request.limit,
                                    cursor=request.cursor)

        def read() -> wire.ListMemoryEntriesResponse:
            page = scoped.list(listing)  # a scope without Memory lists nothing
            # The tag filter applies within each page: a page may hold fewer than limit entries.
            return wire.ListMemoryEntriesResponse(
                entries=[convert.record(e) for e in page.entries if convert.tags_match(e, request.tag_filter)],
                next_cursor=page.next_cursor)

        return await self.run(read)

    async def get_memory_entry(self, request: wire.GetMemoryEntryRequest) -> wire.AtomicMemoryRecord:
        scoped = self.scope(request.scope_id)
        if request.citation is not None:
            citation = request.citation
            return convert.record(await self.run(lambda: _named_version(scoped, citation)))
        target = request.target
        assert target is not None  # the model requires one of them
        return convert.record(await self.run(lambda: _target_entry(scoped, target)))

    async def revise_memory_entry(self, request: wire.ReviseMemoryEntryRequest, *,
                                  idempotency_key: str | None = None) -> wire.MemoryMutationResponse:
        scoped = self.scope(request.scope_id)

        def write() -> wire.MemoryMutationResponse:
            cited = _named_version(scoped, request.citation).entry  # the library checks it is current and active,
            result = scoped.revise(pcmem.ReviseRequest(               # after looking up the idempotency key
                entry_id=cited.entry_id, expected_version=cited.version, text=request.text,
                kind=request.kind, reason=request.reason,
            ), idempotency_key=idempotency_key)
            return self._mutation(scoped, result)

        return await self.run(write)

    async def retire_memory_entry(self, request: wire.RetireMemoryEntryRequest, *,
                                  idempotency_key: str | None = None) -> wire.MemoryMutationResponse:
        scoped = self.scope(request.scope_id)

        def write() -> wire.MemoryMutationResponse:
            cited = _named_version(scoped, request.citation).entry
            result = scoped.retire(pcmem.RetireRequest(entry_id=cited.entry_id,
                                                       expected_version=cited.version, reason=request.reason),
                                   idempotency_key=idempotency_key)
            return self._mutation(scoped, result)

        return await self.run(write)

    async def list_memory_changes(self, request: wire.ListMemoryChangesRequest) -> wire.ListMemoryChangesResponse:
        scoped = self.scope(request.scope_id)

        def previous_version(entry_id: str, revision: int) -> str | None:
            return scoped.get_entry(entry_id, revision - 1).entry.entry_version_id

        def read() -> wire.ListMemoryChangesResponse:
            head = scoped.head()
            if head is None:  # PowerContext: a scope without Memory has no changes, whatever since_revision says
                return convert.changes_response(None, previous_version)
            # Omitted since_revision: the head revision's changes only (PowerContext's rule).
            since = request.since_revision if request.since_revision is not None else head.revision - 1
            try:
                page = scoped.changes(since)
            except RevisionNotFoundError as error:
                raise ApiError(422, "invalid_request", str(error)) from None
            return convert.changes_response(page, previous_version)

        return await self.run(read)

    async def flush_memory(self, request: wire.FlushMemoryRequest) -> wire.FlushMemoryResponse:
        """pcmem commits every write before answering and has no Source journal: nothing is ever pending."""
        scoped = self.scope(request.scope_id)
        head = await self.run(scoped.head)
        return wire.FlushMemoryResponse(status=wire.FlushStatus.idle, previous_cursor=0, current_cursor=0,
                                        high_watermark=0, processed_source_count=0,
                                        memory=convert.memory_reference(head))

    async def get_memory_capacity(self, request: wire.GetMemoryCapacityRequest) -> Any:
        raise ApiError(422, "capability_not_supported", "pcmem sets no Memory capacity budget",
                       {"capability": "memory_capacity"})

    async def get_entry_tags(self, scope_id: str, artifact_id: str, entry_id: str) -> wire.ArtifactTagSet:
        scoped = self.scope(scope_id)
        target = _tag_target(artifact_id, entry_id)
        return _tag_set(scoped.scope, target, await self.run(lambda: _target_entry(scoped, target)))

    async def replace_entry_tags(self, scope_id: str, artifact_id: str, entry_id: str, tags: list[str],
                                 if_match: str) -> wire.ArtifactTagSet:
        """Tags are the entry's ``tags`` metadata: replacing them writes a new version of the entry (so only an
        active entry can be tagged), guarded by the tag set's ETag (``If-Match``)."""
        scoped = self.scope(scope_id)
        target = _tag_target(artifact_id, entry_id)
        labels = _valid_tags(tags)

        def write() -> wire.ArtifactTagSet:
            current = _target_entry(scoped, target)
            if if_match.strip() != "*" and if_match.strip().removeprefix("W/") != etag(_tag_set(scoped.scope,
                                                                                                target, current)):
                raise ApiError(412, "precondition_failed", "the entry's tags changed since the ETag you sent")
            _active(current)
            metadata = {**current.entry.metadata, convert.TAGS_KEY: labels}
            if not labels:
                metadata.pop(convert.TAGS_KEY)
            scoped.revise(pcmem.ReviseRequest(entry_id=current.entry.entry_id, text=current.entry.text,
                                              metadata=metadata, expected_version=current.entry.version))
            return _tag_set(scoped.scope, target, scoped.get_entry(current.entry.entry_id))

        return await self.run(write)

    def _mutation(self, scoped: Any, result: pcmem.WriteResult) -> wire.MemoryMutationResponse:
        changed = not (result.unchanged or result.unchanged_entry_ids or result.duplicates)
        written = {entry.citation: entry for entry in result.entries}  # as the write left them: no read back
        return wire.MemoryMutationResponse(changed=changed, records=[
            convert.record(written[c] if c in written else scoped.get(c)) for c in result.citations])

    # --- pcmem additions --------------------------------------------------------------------------------------

    async def list_scopes(self) -> list[pcmem.ScopeSummary]:
        return await self.run(self.runtime.memory.scopes)

    async def entry_history(self, request: EntryHistoryRequest) -> pcmem.EntryHistory:
        scoped = self.scope(request.scope_id)
        return await self.run(lambda: scoped.history(request.entry_id))

    def ready(self) -> wire.ReadinessResponse:
        """PowerContext's readiness: the store is open and the models this server was started with are loaded."""
        embedder = self.runtime.embedder
        checks = {"store": "ok", "embedder": embedder.profile.model_id if embedder else "none (full-text only)"}
        if self.runtime.reranker is not None:
            checks["reranker"] = self.runtime.reranker.policy_id
        return wire.ReadinessResponse(status=wire.ReadinessStatus.ready, checks=checks)

    def capabilities(self) -> wire.Capabilities:
        """What this server does: explicit Memory and prepared context from it (no Sources, extraction or
        handoffs); vector and hybrid search only with an embedder."""
        modes = [wire.MemorySearchMode.auto, wire.MemorySearchMode.fts]
        if self.runtime.embedder is not None:
            modes += [wire.MemorySearchMode.vector, wire.MemorySearchMode.hybrid]
        return wire.Capabilities(source_types=[], artifact_families=[wire.MEMORY_FAMILY], memory_extraction=False,
                                 handoff_generation=False, search_modes=modes,
                                 context_versions=["powercontext.prepared-context.v1"])

    def readiness(self) -> Readiness:
        embedder = self.runtime.embedder
        reranker = self.runtime.reranker
        generation_model = self.runtime.inference.generation_model if reranker is not None else None
        loaded = [name for name in (embedder.profile.model_id if embedder else None, generation_model) if name]
        return Readiness(
            status="ready", store=self.store, embedder=embedder.profile.model_id if embedder else None,
            rerank_policy=reranker.policy_id if reranker is not None else None, generation_model=generation_model,
            models_loaded=loaded, pcmem_version=pcmem.__version__,
        )


#: pcmem's channel and mode names → PowerContext 1.4.1's (full-text is "text" there).
_TEXT = {"fts": "text"}


def _pcmem_citation(value: wire.MemoryCitation) -> pcmem.Citation:
    cited = convert.pcmem_citation(value)
    if cited is None:
        raise ApiError(404, "artifact_not_found", f"family {value.memory_ref.family!r} is not a Memory artifact")
    return cited


def _cited_entry(scoped: Any, cited: pcmem.Citation) -> pcmem.MemoryEntry:
    head = scoped.head()
    if head is not None and cited.artifact_id != head.artifact_id:
        raise ApiError(404, "artifact_not_found", f"the citation names an artifact that is not scope "
                       f"{scoped.scope!r}'s Memory")
    return scoped.get(cited)


def _named_version(scoped: Any, citation: wire.MemoryCitation | wire.ArtifactReference) -> pcmem.MemoryEntry:
    """The entry version a v1 citation names: an exact citation as it stood in its revision; a record's artifact
    (entry id, version) as that version stood when it was current."""
    if isinstance(citation, wire.MemoryCitation):
        return _cited_entry(scoped, _pcmem_citation(citation))
    entry_id = _artifact_entry_id(citation)
    current = scoped.get_entry(entry_id)
    if current.entry.version == citation.revision:
        return current
    for event in scoped.history(current.entry.entry_id).events:
        if event.entry.version == citation.revision:
            return scoped.get(pcmem.Citation(artifact_id=current.citation.artifact_id, revision=event.revision,
                                             entry_id=event.entry.entry_id,
                                             entry_version_id=event.entry.entry_version_id))
    raise EntryNotFoundError(f"entry {entry_id!r} has no version {citation.revision}")


def _artifact_entry_id(artifact: wire.ArtifactReference) -> str:
    if artifact.family != wire.MEMORY_FAMILY:
        raise ApiError(404, "artifact_not_found", f"family {artifact.family!r} is not a Memory artifact")
    return validate_id(artifact.artifact_id)


def _target_entry(scoped: Any, target: wire.MemoryEntryTarget) -> pcmem.MemoryEntry:
    """The entry a logical target names, at the head: ``artifact_id`` is the scope's Memory (or the entry id, as a
    record's ``artifact`` gives it)."""
    head = scoped.head()
    if head is None or target.artifact_id not in (head.artifact_id, target.entry_id):
        raise ApiError(404, "artifact_not_found", f"no Memory artifact {target.artifact_id!r} in scope "
                       f"{scoped.scope!r}")
    return scoped.get_entry(validate_id(target.entry_id))


def _tag_target(artifact_id: str, entry_id: str) -> wire.MemoryEntryTarget:
    return wire.MemoryEntryTarget(type="memory_entry", family="memory", artifact_id=artifact_id, entry_id=entry_id)


def _tag_set(scope: str, target: wire.MemoryEntryTarget, entry: pcmem.MemoryEntry) -> wire.ArtifactTagSet:
    tags = convert.entry_tags(entry)
    digest = hashlib.sha256(json.dumps(sorted(convert.tag_key(t) for t in tags)).encode()).hexdigest()
    return wire.ArtifactTagSet(scope_id=scope, target=target, tags=tags, tag_digest=f"sha256:{digest}")


def etag(tags: wire.ArtifactTagSet) -> str:
    return f'"{tags.tag_digest}"'


def _valid_tags(tags: list[str]) -> list[str]:
    seen: set[str] = set()
    for tag in tags:
        if tag != tag.strip() or any(unicodedata.category(c) in ("Cc", "Cs", "Cn") for c in tag):
            raise ApiError(422, "invalid_request", "a tag has outer whitespace or a control, surrogate or "
                           "unassigned character")
        if convert.tag_key(tag) in seen:
            raise ApiError(422, "invalid_request", "two tags are the same after NFC + casefold")
        seen.add(convert.tag_key(tag))
    return list(tags)


def _active(entry: pcmem.MemoryEntry) -> pcmem.MemoryEntry:
    if entry.state != "active":
        raise ApiError(409, "memory_entry_inactive", f"entry {entry.citation.entry_id!r} is inactive")
    return entry


def _shown(scoped: Any, hit: pcmem.MemoryHit) -> tuple[pcmem.MemoryHit | pcmem.MemoryEntry, wire.AtomicMemoryRecord]:
    """What a v1 search hit shows, and what its tags are read from: the hit itself (it carries its version), or for
    a hit made by hand the entry its citation names, read back."""
    if hit.version is not None:
        return hit, convert.hit_record(hit)
    entry = scoped.get(hit.citation)
    return entry, convert.record(entry)
