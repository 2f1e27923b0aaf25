"""The ``MemoryReranker`` port (PowerContext's rerank seam): select positions from the coarse pool, never identities."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

from pcmem.types.progress import Progress
from pcmem.types.rerank import MemoryRerankDecision
from pcmem.types.search import MemoryHit

if TYPE_CHECKING:
    from pcmem.embedding.port import Embedder
    from pcmem.rerank.embedding import VectorLookup


class MemoryReranker(Protocol):
    """Selects at most ``limit`` candidates. Raises pcmem's InferenceError subclasses on provider failure."""

    @property
    def policy_id(self) -> str:
        """A versioned policy id, e.g. ``powercontext.memory.rerank.listwise.v1``."""

    def rerank(
        self,
        query: str,
        candidates: Sequence[MemoryHit],
        limit: int,
        progress: Progress | None = None,
    ) -> MemoryRerankDecision:
        """Choose positions (1..len(candidates)) for the normalised ``query``; candidate text is untrusted evidence."""


@runtime_checkable
class StoreBoundReranker(Protocol):
    """A reranker that reads the searched store (its embedder, its stored vectors): the search binds it first."""

    def bind(self, default_embedder: Embedder | None, vectors: VectorLookup) -> MemoryReranker:
        """This reranker for one store: ``default_embedder`` is the runtime's rerank embedder, else the store's own;
        ``vectors`` reads the vectors the store keeps (active, pending or secondary profile)."""


@runtime_checkable
class SecondEmbedderReranker(Protocol):
    """A reranker that compares with an embedder of its own rather than the store's (the embedding policy given one):
    a runtime opened with it keeps that embedder's vectors filled on every write when the store holds them as its
    secondary profile, unless the runtime was given another rerank embedder."""

    @property
    def second_embedder(self) -> Embedder | None:
        """The embedder this reranker was given, or ``None`` when it uses the store's own (bound at search time)."""


def fallback_ranks(candidate_count: int, limit: int) -> tuple[int, ...]:
    """The only built-in fallback: coarse ranks 1..min(limit, n)."""
    return tuple(range(1, min(limit, candidate_count) + 1))


def normalize_ranks(raw: Sequence[object], candidate_count: int, limit: int) -> tuple[tuple[int, ...], int, bool]:
    """The normalisation of emitted ranks → (selected, discarded_count, used_fallback).

    Keep the first occurrence of each in-range integer rank, drop duplicates and out-of-range ranks (counted as
    discarded), stop at ``limit`` valid ranks, never pad; only when no valid rank remains fall back to 1..limit.
    """
    selected: list[int] = []
    discarded = 0
    for rank in raw:
        if len(selected) == limit:
            break
        valid = isinstance(rank, int) and not isinstance(rank, bool) and 1 <= rank <= candidate_count
        if not valid or rank in selected:
            discarded += 1
            continue
        selected.append(cast(int, rank))
    if not selected:
        return fallback_ranks(candidate_count, limit), discarded, True
    return tuple(selected), discarded, False
