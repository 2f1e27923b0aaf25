"""More of #31's fusion candidates on LoCoMo: the embedding reranker over a larger coarse pool, next to the fusions of
:mod:`pcmem_bench.fusion_tune`, measured with the same two folds and the same tuning rule.

The embedding reranker (:mod:`pcmem.rerank.embedding`) orders the coarse pool — the contract's RRF over channel lists
``max(4 · c, 32)`` deep, cut to ``c`` — by cosine to the query and keeps the first ``k``. Its one parameter is the pool
size ``c`` (``candidate_limit``; pcmem's default 30): a larger pool lets the embedder reach further down the fused
order, and at ``c`` > 30 it also changes frac@30. Here the embedder is the store's own (the case that matters is an
EmbeddingGemma store: "vector alone beats hybrid" there), so every cosine is read from the store's vectors.

Each question is fetched once, in one pass (the query is embedded once, then memoised by the embedder): the 10- and
30-hit channel lists :mod:`pcmem_bench.fusion_tune` evaluates, each pool's fused order, and the cosine of every
candidate that appears in any of them. Everything else is offline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from pcmem.compose.runtime import SyncRuntime
from pcmem.search.fusion import rrf_fuse
from pcmem.types.progress import Progress
from pcmem.types.search import SearchMemoryRequest
from pcmem_bench import fusion_tune, jsonl, metrics
from pcmem_bench.fusion_tune import HALVES, FetchedQuestion
from pcmem_bench.locomo_data import Conversation, Question
from pcmem_bench.locomo_ingest import ingest

POOLS = (30, 50, 100)  # coarse pool sizes c (candidate_limit) the reranker is measured over

#: A ranked answer for one question at one page size: entry ids, best first.
Ranker = Callable[["PooledQuestion", int], list[str]]


@dataclass
class PooledQuestion:
    """One question: its 10/30-hit channel lists, each pool's fused order and the cosine of every candidate seen."""

    fetched: FetchedQuestion
    pools: dict[int, list[tuple[str, str]]]  # pool size c -> (entry_id, entry_version_id) in coarse (RRF) order
    cosine: dict[str, float]  # entry_version_id -> cosine to the query under the store's embedder

    def to_json(self) -> dict[str, Any]:
        return {**self.fetched.to_json(), "pools": {str(c): pool for c, pool in self.pools.items()},
                "cosine": self.cosine}

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> PooledQuestion:
        return cls(FetchedQuestion.from_json(row),
                   {int(c): [(entry, version) for entry, version in pool] for c, pool in row["pools"].items()},
                   {k: float(v) for k, v in row["cosine"].items()})


def fetch(runtime: SyncRuntime, conversations: Sequence[Conversation], questions: Sequence[Question],
          pools: Sequence[int] = POOLS, progress: Progress | None = None) -> list[PooledQuestion]:
    """Ingest the questions' conversations (unless already there), then per question: the channel lists at each page size (as
    :func:`fusion_tune.fetch`), each pool's coarse order (the service's own channel lists for a reranking search
    with ``candidate_limit`` = c, fused by the contract's RRF) and the stored cosine of every candidate seen."""
    position = {c.sample_id: i for i, c in enumerate(conversations)}
    asked = {question.conversation for question in questions}
    ingest(runtime, [c for c in conversations if c.sample_id in asked])
    embedder = runtime.embedder
    if embedder is None:
        raise ValueError("the embedding reranker needs the store's embedder")
    service = runtime.memory.parts.search
    backend = runtime.backend
    kept_limit = service.candidate_limit
    out = []
    try:
        for done, question in enumerate(questions, start=1):
            fetched = fusion_tune.fetch_question(service, position[question.conversation], question)
            scope, channels = (f"locomo-{question.conversation}",), fetched.channels
            coarse: dict[int, list[tuple[str, str]]] = {}
            for pool in pools:
                service.candidate_limit = pool
                found = service.channel_lists(scope, SearchMemoryRequest(query=question.question, limit=10,
                                                                         mode="hybrid"), reranking=True)
                coarse[pool] = [(f.candidate.entry_id, f.candidate.entry_version_id)
                                for f in rrf_fuse(found.channels, found.coarse_limit)]
            seen = sorted({version for pool in coarse.values() for _, version in pool}
                          | {c.entry_version_id for lists in channels.values() for found in lists.values()
                             for c in found})
            stored = backend.stored_vectors(embedder.profile, seen)
            query = np.asarray(embedder.embed_query(question.question), dtype=np.float32)
            cosine = {version: float(np.dot(vector, query)) for version, vector in stored.items()}
            out.append(PooledQuestion(fetched, coarse, cosine))
            if progress:
                progress(done, len(questions))
    finally:
        service.candidate_limit = kept_limit
    return out


def save(pooled: Sequence[PooledQuestion], path: str | Path) -> None:
    jsonl.write((item.to_json() for item in pooled), path)


def load(path: str | Path) -> list[PooledQuestion]:
    return [PooledQuestion.from_json(row) for row in jsonl.read(path)]


def reranked(item: PooledQuestion, pool: int, depth: int) -> list[str]:
    """The embedding reranker's page: the coarse pool of size max(depth, c) ordered by cosine (ties keep coarse
    order, as :class:`pcmem.rerank.embedding.EmbeddingReranker` does), cut to ``depth``."""
    coarse = item.pools[max(depth, pool)]
    order = sorted(range(len(coarse)), key=lambda i: (-item.cosine.get(coarse[i][1], -2.0), i))
    return [coarse[i][0] for i in order[:depth]]


def rankers(pools: Sequence[int]) -> dict[str, Ranker]:
    """Every candidate by label: :func:`fusion_tune.candidates` on the 10/30-hit lists, and the reranker per pool."""
    out: dict[str, Ranker] = {label: partial(_fused, fusion) for label, fusion in fusion_tune.candidates().items()}
    for pool in pools:
        out[f"rerank:pool={pool}"] = partial(_reranked_by_pool, pool)
    return out


def _fused(fusion: fusion_tune.FusionFn, item: PooledQuestion, depth: int) -> list[str]:
    return [f.candidate.entry_id for f in fusion(item.fetched.channels[depth], depth)]


def _reranked_by_pool(pool: int, item: PooledQuestion, depth: int) -> list[str]:
    return reranked(item, pool, depth)


def table(items: Sequence[PooledQuestion], ranker: Ranker) -> dict[str, Any]:
    rows = [(item.fetched, metrics.fraction_found(ranker(item, 10), item.fetched.question.evidence, 10),
             metrics.fraction_found(ranker(item, 30), item.fetched.question.evidence, 30)) for item in items]
    return fusion_tune.summary(rows)


def evaluate(pooled: Sequence[PooledQuestion]) -> dict[str, Any]:
    """Both folds, as :func:`fusion_tune.evaluate`, with the reranker's pool size as one more tuned family."""
    pools = sorted({c for item in pooled for c in item.pools})
    candidates = rankers(pools)
    halves = [[p for p in pooled if p.fetched.conversation in half] for half in HALVES]
    tables = [{label: table(half, ranker) for label, ranker in candidates.items()} for half in halves]
    families = (*fusion_tune.FAMILIES, "rerank")
    folds = []
    for tune, held in ((0, 1), (1, 0)):
        fold: dict[str, Any] = {"tuned_on": list(HALVES[tune]), "reported_on": list(HALVES[held]), "rows": {}}
        for label in ("fts-only", "vector-only", "rrf", *(f"rerank:pool={c}" for c in pools)):
            fold["rows"][label] = tables[held][label]
        for family in families:
            chosen = fusion_tune.choose(tables[tune], family)
            fold["rows"][f"{family} (chosen: {chosen})"] = {**tables[held][chosen], "chosen": chosen}
        folds.append(fold)
    refit = {family: fusion_tune.refit(tables, family) for family in families}
    grid = {label: {"frac@10": [t[label]["frac@10"] for t in tables], "frac@30": [t[label]["frac@30"] for t in tables]}
            for label in candidates}
    fetch_times = sorted(p.fetched.fetch_ms for p in pooled)
    return {"questions": len(pooled), "folds": folds, "refit": refit, "fusion_ms_at_30": {},
            "refit_by_half": {label: [t[label] for t in tables]
                              for label in dict.fromkeys(("fts-only", "vector-only", "rrf", *refit.values()))},
            "grid_by_half": grid,
            "fetch_ms_p50": metrics.percentile(fetch_times, 50), "fetch_ms_p95": metrics.percentile(fetch_times, 95)}
