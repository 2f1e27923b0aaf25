"""The shipped rerank policies' builders (declared in :mod:`pcmem.rerank_policies`): each takes a
:class:`~pcmem.compose.rerankers.RerankBuild` and returns the policy's reranker."""

from __future__ import annotations

from pcmem.compose.decisions import decision_memo, decision_reranker
from pcmem.compose.embedders import named_embedder
from pcmem.compose.rerankers import RerankBuild
from pcmem.inference.llama_cpp import LlamaCppGenerator
from pcmem.rerank.decision import DecisionReranker
from pcmem.rerank.embedding import EmbeddingReranker
from pcmem.rerank.listwise import ListwiseReranker


def listwise(build: RerankBuild) -> ListwiseReranker:
    inference = build.inference
    return ListwiseReranker(LlamaCppGenerator(build.model(), timeout_seconds=inference.generation_timeout_seconds,
                                              max_requests=inference.generation_max_requests))


def decision(build: RerankBuild) -> DecisionReranker:
    return _decision(build, fill_to_limit=False)


def decision_fill(build: RerankBuild) -> DecisionReranker:
    return _decision(build, fill_to_limit=True)


def _decision(build: RerankBuild, *, fill_to_limit: bool) -> DecisionReranker:
    """The decision policies of one run share a memo of the model's verdicts when the run asks for it (identical by
    construction: one deterministic forward pass per request), so each verdict is computed once."""
    model = build.model()
    memo = None
    if build.shared is not None:
        memo = build.shared.setdefault("decision-memo", decision_memo(model, build.inference))
    return decision_reranker(model, build.inference, fill_to_limit=fill_to_limit, memo=memo)


def embedding(build: RerankBuild) -> EmbeddingReranker:
    """The searched store's embedder and stored vectors, or a second embedder (a preset name or model directory)."""
    return EmbeddingReranker(None if build.rerank_embedder is None else named_embedder(build.rerank_embedder))
