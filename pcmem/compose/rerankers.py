"""Composition of the rerank stage (RFC 0080 / RFC 1745): which reranker a runtime uses, decided at startup.

- An injected ``MemoryReranker`` always applies, even when ``memory_rerank_enabled`` is false.
- ``memory_rerank_enabled`` without an injected reranker needs ``generation_model``; it builds the listwise policy.
- A missing llama.cpp, an unknown provider, a missing or corrupt model file: ConfigurationError now, not at the
  first search.
"""

from __future__ import annotations

from collections.abc import Sequence

from pcmem.compose.decisions import decision_memo, decision_reranker
from pcmem.compose.embedders import named_embedder
from pcmem.compose.models import load_model
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.errors import ConfigurationError
from pcmem.inference.llama_cpp import LlamaCppGenerator
from pcmem.rerank.embedding import EmbeddingReranker
from pcmem.rerank.listwise import ListwiseReranker
from pcmem.rerank.port import MemoryReranker
from pcmem.types.progress import Progress
from pcmem.types.rerank import RerankPolicy


def build_reranker(
    policy: RerankPolicy, inference: InferenceConfig, progress: Progress | None = None, *,
    rerank_embedder: str | None = None,
) -> MemoryReranker:
    """A reranker of ``policy`` (the CLI's ``--rerank``): on the configured local model, or for ``embedding`` on the
    store's own embedder (``rerank_embedder=None``) or a second one (a preset name or model directory)."""
    if policy == "embedding":
        return embedding_reranker(rerank_embedder)
    if rerank_embedder is not None:
        raise ConfigurationError(f"--rerank-embedder applies to the embedding policy only, not {policy!r}")
    model = load_model(inference, progress)
    if policy == "listwise":
        generator = LlamaCppGenerator(
            model, timeout_seconds=inference.generation_timeout_seconds, max_requests=inference.generation_max_requests
        )
        return ListwiseReranker(generator)
    return decision_reranker(model, inference, fill_to_limit=policy == "decision-fill")


def build_rerankers(
    policies: Sequence[RerankPolicy], inference: InferenceConfig, progress: Progress | None = None, *,
    rerank_embedder: str | None = None, share_decisions: bool = False,
) -> dict[RerankPolicy, MemoryReranker]:
    """One reranker per policy (benchmarks compare several in one run). ``rerank_embedder`` goes to ``embedding``
    only. ``share_decisions``: the decision policies share one memo of the model's verdicts (identical by
    construction: one deterministic forward pass per request), so each verdict is computed once per run."""
    built: dict[RerankPolicy, MemoryReranker] = {}
    memo = None
    for policy in policies:
        if policy in ("decision", "decision-fill") and share_decisions:
            model = load_model(inference, progress)
            memo = memo or decision_memo(model, inference)
            built[policy] = decision_reranker(model, inference, fill_to_limit=policy == "decision-fill", memo=memo)
        else:
            built[policy] = build_reranker(policy, inference, progress,
                                           rerank_embedder=rerank_embedder if policy == "embedding" else None)
    return built


def embedding_reranker(choice: str | None = None) -> EmbeddingReranker:
    """The embedding policy: the searched store's embedder and stored vectors, or a second embedder ``choice``."""
    return EmbeddingReranker(None if choice is None else named_embedder(choice))


def compose_reranker(
    config: RuntimeConfig,
    inference: InferenceConfig,
    injected: MemoryReranker | None,
    progress: Progress | None = None,
) -> MemoryReranker | None:
    if injected is not None:
        return injected
    if not config.memory_rerank_enabled:
        return None
    if inference.generation_model is None:
        raise ConfigurationError(
            "memory rerank is enabled but no generation model is configured and no reranker was injected: set "
            "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL or disable POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED"
        )
    return build_reranker("listwise", inference, progress)
