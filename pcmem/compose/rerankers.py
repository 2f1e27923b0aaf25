"""Composition of the rerank stage: which reranker a runtime uses, decided at startup.

- An injected ``MemoryReranker`` always applies, even when ``memory_rerank_enabled`` is false.
- ``memory_rerank_enabled`` without an injected reranker needs ``generation_model``; it builds the listwise policy.
- A missing llama.cpp, an unknown provider, a missing or corrupt model file: ConfigurationError now, not at the
  first search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pcmem import rerank_policies
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.errors import ConfigurationError
from pcmem.rerank.port import MemoryReranker
from pcmem.types.progress import Progress
from pcmem.types.rerank import RerankPolicy

if TYPE_CHECKING:
    from pcmem.inference.llama_cpp import LlamaCppModel


@dataclass
class RerankBuild:
    """What a policy's builder (:attr:`pcmem.rerank_policies.RerankPolicyDeclaration.build`) builds its reranker
    from."""

    inference: InferenceConfig
    progress: Progress | None = None
    #: ``--rerank-embedder``: a preset name or model directory (only for a policy that takes one).
    rerank_embedder: str | None = None
    #: State the policies of one :func:`build_rerankers` call share (``None``: nothing is shared).
    shared: dict[str, Any] | None = field(default=None)

    def model(self) -> LlamaCppModel:
        """The configured local generation model, loaded once per process (ConfigurationError when there is none)."""
        from pcmem.compose.models import load_model

        return load_model(self.inference, self.progress)


def build_reranker(
    policy: RerankPolicy, inference: InferenceConfig, progress: Progress | None = None, *,
    rerank_embedder: str | None = None,
) -> MemoryReranker:
    """A reranker of ``policy`` (the CLI's ``--rerank``, declared in :mod:`pcmem.rerank_policies`): on the configured
    local model, or for ``embedding`` on the store's own embedder (``rerank_embedder=None``) or a second one (a preset
    name or model directory). InputError for an unknown policy."""
    return _build(policy, RerankBuild(inference, progress, rerank_embedder))


def _build(policy: RerankPolicy, build: RerankBuild) -> MemoryReranker:
    declared = rerank_policies.named(policy)
    if build.rerank_embedder is not None and not declared.takes_embedder:
        raise ConfigurationError(f"--rerank-embedder applies to the embedding policy only, not {policy!r}")
    reranker: MemoryReranker = declared.builder()(build)
    return reranker


def build_rerankers(
    policies: Sequence[RerankPolicy], inference: InferenceConfig, progress: Progress | None = None, *,
    rerank_embedder: str | None = None, share_decisions: bool = False,
) -> dict[RerankPolicy, MemoryReranker]:
    """One reranker per policy (benchmarks compare several in one run). ``rerank_embedder`` goes to the policies that
    take one. ``share_decisions``: the policies share what their builders keep in :attr:`RerankBuild.shared` (the
    decision policies: one memo of the model's verdicts, so each verdict is computed once per run)."""
    shared: dict[str, Any] | None = {} if share_decisions else None
    built: dict[RerankPolicy, MemoryReranker] = {}
    for policy in policies:
        second = rerank_embedder if rerank_policies.named(policy).takes_embedder else None
        built[policy] = _build(policy, RerankBuild(inference, progress, second, shared))
    return built


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
