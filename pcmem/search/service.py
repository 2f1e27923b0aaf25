"""The coarse retrieval path: mode by capability, channel candidates, admission, RRF.

Runs synchronously (the async API calls it from a worker thread). Reads one head snapshot per scope searched, so
every hit of a scope cites the same revision of it.

Filters and several scopes keep the same rules and only change where candidates come from:

- **Filters** (kinds, metadata, created-at) are applied to each channel's candidates *before* the channel is cut
  to ``max(4 · coarse_limit, 32)``: the backend is asked for 4x the channel count, the filter drops what does not
  match, and while a channel has fewer survivors than the channel count and the store had more candidates, it is
  asked again for 4x as many (up to every candidate). Only then is the channel truncated, admitted (FTS term
  count, cosine ≥ 0.3) and fused. A filter never loses a match because unfiltered candidates filled the channel
  first; a selective filter costs more reads than an unselective one.
- **Fusion**: RRF (k = 60) is the contract's and the default. A request's ``fusion`` (else the runtime's, else the
  store's default) may choose a non-contract fusion of the same admitted channel lists (:mod:`pcmem.search.fusion`);
  the page names the fusion that ran and where the choice came from.
- **Several scopes**: mode choice needs the capability in every scope (auto → hybrid only if vectors are
  available in all of them). Each channel's candidates from all scopes are merged into one list by channel
  score (BM25 and cosine are comparable across scopes: one index, one embedding space per store), ties bytewise
  by (artifact, entry, version), and cut to ``max(4 · coarse_limit, 32)`` for the union — not per scope. Then one
  admission and one RRF (k = 60) over the union; the coarse limit and rerank pool (``max(k, c)``) are those of one
  search. Each hit cites its own scope's artifact and head revision.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from pcmem.embedding.port import Embedder
from pcmem.errors import CapabilityNotSupportedError, EmbeddingError, RerankError, SnapshotMoved
from pcmem.rerank.choice import RerankerChoice, override
from pcmem.rerank.port import StoreBoundReranker
from pcmem.search.fusion import (
    Fused,
    admit_fts,
    admit_vector,
    channel_candidate_count,
    choose_fusion,
    fuse,
    fusion_parameters,
)
from pcmem.settings import FusionSource, SearchFusion
from pcmem.store.port import RevisionLog, SearchIndex, StoreSettings, VectorReads
from pcmem.types.base import without_validation
from pcmem.types.memory import Citation, EntryVersion, MemoryRef
from pcmem.types.search import Candidate, MemoryHit, RerankTrace, ResolvedMode, SearchMemoryRequest, SearchPage
from pcmem.types.storage import ChannelCandidates, VectorStatus

if TYPE_CHECKING:
    import numpy as np

    from pcmem.rerank.port import MemoryReranker
    from pcmem.types.embedding import EmbeddingProfile
    from pcmem.types.progress import Progress
    from pcmem.types.rerank import MemoryRerankDecision

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_CANDIDATE_LIMIT = 30  # the reranker sees up to 30 coarse candidates by default (PowerContext's default)
EVERY_CANDIDATE = 10_000_000  # the most a filtered search asks one channel for (in effect: all of them)


class SearchedStore(SearchIndex, VectorReads, RevisionLog, StoreSettings, Protocol):
    """What a search reads of a store: its index, the versions of a page's hits, the vectors its reranker may
    compare, and its default fusion."""


class SearchService:
    def __init__(
        self,
        backend: SearchedStore,
        embedder: Embedder | None,
        reranker: MemoryReranker | None = None,
        candidate_limit: int = DEFAULT_CANDIDATE_LIMIT,
        *,
        rerank_embedder: Callable[[], Embedder | None] | None = None,
        fusion: SearchFusion | None = None,
    ) -> None:
        self._backend = backend
        self._embedder = embedder
        self._embedder_loaded = False  # by load_embedder (a later switch of vector space builds another service)
        self._rerank_embedder = rerank_embedder  # the embedding policy's default: its answer, else the store's own
        self.reranker = reranker
        self.candidate_limit = candidate_limit
        self.fusion = fusion  # the runtime's (PCMEM_SEARCH_FUSION); None: the store's default, else the contract's

    def load_embedder(self) -> EmbeddingProfile | None:
        """Load the query embedder now (it loads its model on first use) by embedding one query; its profile, or
        ``None`` when this service searches full text only. Raises EmbeddingError, ConfigurationError."""
        if self._embedder is None:
            return None
        if not self._embedder_loaded:
            self._embedder.embed_query("warm up")
            self._embedder_loaded = True
        return self._embedder.profile

    def warm(self, scope: str) -> bool:
        """Load what the scope's first search would read first (:meth:`SearchIndex.warm`; its vector view only when
        this service embeds queries); ``False`` when the scope has no memory. Raises StoreError."""
        return self._backend.warm(scope, vectors=self._embedder is not None)

    def default_fusion(self) -> tuple[SearchFusion, FusionSource]:
        """The fusion a search that does not choose one runs, and where that comes from (see :func:`choose_fusion`)."""
        return choose_fusion(None, self.fusion, self._backend.search_fusion_default)

    def vector_available(self, status: VectorStatus) -> bool:
        """Vectors are usable: the store's profile equals the configured one and every active entry has a vector."""
        return self._embedder is not None and status.profile == self._embedder.profile and status.complete

    def resolve_mode(self, requested: str, scope: str | tuple[str, ...]) -> ResolvedMode:
        """auto → hybrid when vectors are available (in every scope), else fts (never vector alone); explicit modes
        never degrade."""
        if requested == "fts":
            return "fts"
        for one in (scope,) if isinstance(scope, str) else scope:
            status = self._backend.vector_status(one)
            if not self.vector_available(status):
                if requested == "auto":
                    return "fts"
                raise CapabilityNotSupportedError(self._why_no_vectors(requested, status))
        return "hybrid" if requested == "auto" else requested  # type: ignore[return-value]

    def _why_no_vectors(self, requested: str, status: VectorStatus) -> str:
        if self._embedder is None:
            if status.profile is not None:
                return (f"mode {requested!r} needs the store's embedder ({status.profile.describe()}), which this "
                        "runtime does not have: pass it with --embedder (a preset, or the model's directory)")
            return f"mode {requested!r} needs an embedder, and this runtime has none"
        stored = status.profile
        if stored != self._embedder.profile:
            found = stored.describe() if stored else "none"
            return (
                f"mode {requested!r} is unavailable: the store's embedding profile is {found}, the configured one is "
                f"{self._embedder.profile.describe()}; switch the store with `pcmem reindex --embedder ...`"
            )
        scope = status.memory.scope if status.memory is not None else None
        return f"mode {requested!r} is unavailable: some entries of {scope!r} have no vector; run `pcmem reindex`"

    def search(
        self,
        scopes: tuple[str, ...],
        request: SearchMemoryRequest,
        reranker: MemoryReranker | None = None,
        progress: Progress | None = None,
    ) -> SearchPage:
        """Coarse retrieval, then the reranker (the runtime's, or ``reranker`` for this call) when there are hits."""
        reranker = reranker or self.reranker
        page = self._coarse(scopes, request, reranker is not None)
        if reranker is None or not page.hits:
            return page.model_copy(update={"hits": page.hits[: request.limit]})
        return self._rerank(page, request, reranker, progress)

    def search_with_choice(self, scopes: tuple[str, ...], request: SearchMemoryRequest, choice: RerankerChoice,
               progress: Progress | None = None) -> SearchPage:
        """A search with the reranker its caller chose (:mod:`pcmem.rerank.choice`): ``"none"`` is the coarse page,
        ``"default"`` the runtime's reranker, a reranker that one."""
        if choice == "none":
            return self.coarse(scopes, request)
        return self.search(scopes, request, override(choice), progress)

    def coarse(self, scopes: tuple[str, ...], request: SearchMemoryRequest) -> SearchPage:
        """Fused coarse hits only, never reranked (for advisory consumers such as the write gate)."""
        page = self._coarse(scopes, request, reranking=False)
        return page.model_copy(update={"hits": page.hits[: request.limit]})

    def _rerank(
        self, page: SearchPage, request: SearchMemoryRequest, reranker: MemoryReranker, progress: Progress | None
    ) -> SearchPage:
        if isinstance(reranker, StoreBoundReranker):  # e.g. the embedding policy: reads this store's vectors
            second = self._rerank_embedder() if self._rerank_embedder is not None else None
            reranker = reranker.bind(second or self._embedder, self._backend.stored_vectors)
        return rerank_page(page, request, reranker, progress)

    def _scope_candidates(self, scope: str, request: SearchMemoryRequest, terms: list[str] | None,
                          query_vector: np.ndarray | None, channel_limit: int, every_version: bool
                          ) -> ChannelCandidates:
        """One scope's channel candidates, filtered before any cut: exact, without reading the whole scope.

        Unfiltered: the channel count itself. Filtered: ask for 4x the channel count and filter; when a channel has
        fewer than ``channel_limit`` survivors and the store had more candidates, ask again for 4x as many. The
        survivors returned are then exactly the first ``channel_limit`` a filter-first scan would give, all read
        from one snapshot (the last request's). Versions come with the candidates when a filter needs them or
        ``every_version`` asks for them; else the page reads its hits' afterwards (:meth:`_coarse_in_snapshot`).
        """
        limit = channel_limit
        while True:
            if request.filtered:
                limit = min(4 * limit, EVERY_CANDIDATE)
            found = self._backend.candidates(scope, fts_terms=terms, query_vector=query_vector, limit=limit,
                                             with_versions=request.filtered or every_version)
            if found.memory is None or not request.filtered:
                return found
            fts = [c for c in found.fts if request.admits(found.versions[c.entry_version_id])]
            vector = [c for c in found.vector if request.admits(found.versions[c.entry_version_id])]
            enough = all(len(kept) >= channel_limit or len(got) < limit
                         for kept, got in ((fts, found.fts), (vector, found.vector)))
            if enough or limit >= EVERY_CANDIDATE:
                return ChannelCandidates(memory=found.memory, fts=fts, vector=vector, versions=found.versions)

    def _coarse(self, scopes: tuple[str, ...], request: SearchMemoryRequest, reranking: bool) -> SearchPage:
        # One read snapshot for the mode check, every scope's candidates and their versions: every hit of a scope
        # cites the revision its candidates came from, and the store is asked once, not once per step.
        embedded: dict[str, np.ndarray] = {}
        return self._in_snapshot(lambda: self._coarse_in_snapshot(scopes, request, reranking, embedded))

    def channel_lists(self, scopes: tuple[str, ...], request: SearchMemoryRequest, reranking: bool = False
                      ) -> AdmittedChannels:
        """Each channel's admitted candidates (with their BM25 / cosine scores), exactly what the fusion gets: lets a
        benchmark fetch them once per question and compare fusions offline."""
        embedded: dict[str, np.ndarray] = {}
        return self._in_snapshot(lambda: self._channels_in_snapshot(scopes, request, reranking, embedded,
                                                                    every_version=True))

    def _in_snapshot(self, read: Callable[[], T]) -> T:
        """``read()`` in one read snapshot; once more when the backend's memo went stale under it (SnapshotMoved:
        a write committed meanwhile), in a plain snapshot, which cannot move."""
        try:
            with self._backend.reading():
                return read()
        except SnapshotMoved:
            with self._backend.reading():
                return read()

    def _channels_in_snapshot(self, scopes: tuple[str, ...], request: SearchMemoryRequest, reranking: bool,
                              embedded: dict[str, np.ndarray], every_version: bool) -> AdmittedChannels:
        """``embedded`` keeps the query's vector for a second attempt (see :meth:`_in_snapshot`); the candidates'
        versions are read only with ``every_version`` or a filter (see :meth:`_scope_candidates`)."""
        mode = self.resolve_mode(request.mode, scopes)
        query_vector: np.ndarray | None = None
        if mode != "fts":
            assert self._embedder is not None  # vector modes resolve only with an embedder
            try:
                query_vector = embedded.get("query")
                if query_vector is None:
                    query_vector = embedded["query"] = self._embedder.embed_query(request.query)
            except EmbeddingError as error:
                if request.mode != "auto":
                    raise
                # One line, no traceback: the search still succeeds, the user needs the reason, not our stack.
                log.warning("embedding the query failed (%s); auto mode searched full text only", error)
                mode = "fts"
        terms = self._backend.analyzer.query_terms(request.query)
        coarse_limit = max(request.limit, self.candidate_limit) if reranking else request.limit  # the reranker's pool
        channel_limit = channel_candidate_count(coarse_limit)  # each channel's share
        memories: dict[str, MemoryRef] = {}
        versions: dict[str, EntryVersion] = {}
        fts: list[Candidate] = []
        vector: list[Candidate] = []
        for scope in scopes:
            found = self._scope_candidates(scope, request, terms if mode in ("fts", "hybrid") else None,
                                           query_vector if mode in ("vector", "hybrid") else None, channel_limit,
                                           every_version)
            if found.memory is None:
                continue
            memories[found.memory.artifact_id] = found.memory
            versions.update(found.versions)
            fts.extend(found.fts)
            vector.extend(found.vector)
        if len(scopes) > 1:  # one channel list over the union, best first, ties bytewise (the fusion's order)
            fts.sort(key=lambda c: (-c.score, c.key))
            vector.sort(key=lambda c: (-c.score, c.key))
        fts, vector = fts[:channel_limit], vector[:channel_limit]
        return AdmittedChannels(mode=mode, coarse_limit=coarse_limit, memories=memories, versions=versions,
                                channels={"fts": admit_fts(fts, len(terms)), "vector": admit_vector(vector)})

    def _coarse_in_snapshot(self, scopes: tuple[str, ...], request: SearchMemoryRequest, reranking: bool,
                            embedded: dict[str, np.ndarray]) -> SearchPage:
        found = self._channels_in_snapshot(scopes, request, reranking, embedded, every_version=False)
        fusion, source = choose_fusion(request.fusion, self.fusion, self._backend.search_fusion_default)
        model_id = self._embedder.profile.model_id if self._embedder is not None else None  # convex's weight
        if not found.memories:
            return SearchPage(memory=None, mode=found.mode, hits=(), fusion=fusion, fusion_source=source,
                              fusion_parameters=fusion_parameters(fusion, model_id))
        fused = fuse(fusion, found.channels, found.coarse_limit, model_id)
        # Only the page's versions, read in this search's snapshot (an unfiltered search read none with its candidates)
        versions = found.versions
        missing = [item.candidate.entry_version_id for item in fused
                   if item.candidate.entry_version_id not in versions]
        if missing:
            versions = {**versions, **self._backend.entry_versions(missing)}
        hits = [_hit(found.memories[item.candidate.artifact_id], versions[item.candidate.entry_version_id], item)
                for item in fused]
        single = next(iter(found.memories.values())) if len(scopes) == 1 else None
        return SearchPage(memory=single, mode=found.mode, hits=tuple(hits), memories=tuple(found.memories.values()),
                          fusion=fusion, fusion_source=source, fusion_parameters=fusion_parameters(fusion, model_id))


@dataclass(frozen=True, slots=True)
class AdmittedChannels:
    """One search's channels after admission, read from one snapshot, before any fusion."""

    mode: ResolvedMode
    coarse_limit: int
    memories: dict[str, MemoryRef]  # by artifact id: every scope searched that has a memory
    versions: dict[str, EntryVersion]  # every candidate's entry version, by id
    channels: dict[str, list[Candidate]]  # "fts" / "vector": admitted candidates, best first


def _hit(memory: MemoryRef, version: EntryVersion, fused: Fused) -> MemoryHit:
    """A hit built without validating it again: every part comes from a stored version, validated when it was
    written, and from the fusion's own float and channel names (validating them was ~20 model builds per search)."""
    citation = without_validation(Citation, artifact_id=memory.artifact_id, revision=memory.revision,
                       entry_id=version.entry_id, entry_version_id=version.entry_version_id)
    return without_validation(MemoryHit, citation=citation, text=version.text, kind=version.kind, score=fused.score,
                   matched_by=fused.matched_by, metadata=dict(version.metadata), channels=fused.channels,
                   version=version.version, created_at=version.created_at)


def rerank_page(page: SearchPage, request: SearchMemoryRequest, reranker: MemoryReranker,
                progress: Progress | None) -> SearchPage:
    """The rerank steps on a coarse page whose hits are the pool: the reranker selects positions, the page keeps the
    selected hit objects in its order, with the trace. Also what a client of another process's owner runs with a
    reranker of its own, on the pool the owner returned (:mod:`pcmem.owner.in_client`)."""
    # No lock is held here: a slow model never serialises other searches or writes of the scope.
    candidates = page.hits
    limit = min(request.limit, len(candidates))
    started = time.perf_counter()
    decision = reranker.rerank(request.query, candidates, limit, progress)
    latency_ms = (time.perf_counter() - started) * 1000
    _check_selection(decision, len(candidates), limit, reranker.policy_id)
    trace = RerankTrace(
        policy_id=reranker.policy_id,
        candidates=candidates,
        selected_ranks=decision.selected_ranks,
        discarded_rank_count=decision.discarded_rank_count,
        used_fallback=decision.used_fallback,
        latency_ms=latency_ms,
        usage=decision.usage,
        decision_calls=decision.decision_calls,
        decisions=decision.decisions,
        embedder=decision.embedder,
        cosines=decision.cosines,
    )
    hits = tuple(candidates[rank - 1] for rank in decision.selected_ranks)  # the original hit objects
    return page.model_copy(update={"hits": hits, "rerank": trace})


def _check_selection(decision: MemoryRerankDecision, count: int, limit: int, policy_id: str) -> None:
    """Identity cannot be invented: every rank must point into the pool, once, and at most ``limit`` of them."""
    ranks = decision.selected_ranks
    if len(ranks) > limit or len(set(ranks)) != len(ranks) or any(not 1 <= r <= count for r in ranks):
        raise RerankError(f"reranker {policy_id} selected invalid ranks {list(ranks)} for a pool of {count}")
