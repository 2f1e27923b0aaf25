"""Parts a runtime is built from that need no runtime: the write gate around a decision model, and how a runtime's
Memory builds its search service."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pcmem.embedding.port import Embedder
from pcmem.memory.vectors import SearchFactory
from pcmem.rerank.port import MemoryReranker
from pcmem.search.service import SearchedStore, SearchService
from pcmem.settings import SearchFusion

if TYPE_CHECKING:
    from pcmem.decision.port import DecisionModel
    from pcmem.memory.write_gate import WriteGate


def write_gate_for(decision_model: DecisionModel | None) -> WriteGate | None:
    """The write gate around ``decision_model``: the decision code loads only when a gate is asked for (a search
    never needs it)."""
    if decision_model is None:
        return None
    from pcmem.memory.write_gate import WriteGate

    return WriteGate(decision_model)


def search_factory(backend: SearchedStore, reranker: Callable[[], MemoryReranker | None],
                    candidate_limit: int, fusion: SearchFusion | None) -> SearchFactory:
    """How the runtime's Memory builds its search service for an embedder (again after a vector-space switch), with
    the runtime's reranker at that moment and its fusion (``None``: the store's default, else the contract's)."""
    def search_for(embedder: Embedder | None, rerank_embedder: Callable[[], Embedder | None]) -> SearchService:
        return SearchService(backend, embedder, reranker(), candidate_limit, rerank_embedder=rerank_embedder,
                             fusion=fusion)
    return search_for
