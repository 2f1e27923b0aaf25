"""Wiring decision backends to their consumer roles (RFC 1745): resolved once, at composition."""

from __future__ import annotations

from pcmem.config import InferenceConfig
from pcmem.decision.envelope import for_role
from pcmem.decision.llama_cpp import LlamaCppDecisionModel
from pcmem.decision.port import DecisionModel
from pcmem.inference.llama_cpp import LlamaCppModel
from pcmem.rerank.decision import DecisionReranker

_backends: dict[int, LlamaCppDecisionModel] = {}


def decision_backend(model: LlamaCppModel, inference: InferenceConfig) -> DecisionModel:
    """One decision backend per loaded model, shared by every role (rerank unwrapped, advisory roles wrapped)."""
    backend = _backends.get(id(model))
    if backend is None or backend.model is not model:
        backend = LlamaCppDecisionModel(model, timeout_seconds=inference.generation_timeout_seconds)
        _backends[id(model)] = backend
    return backend


def decision_reranker(model: LlamaCppModel, inference: InferenceConfig, *, fill_to_limit: bool = False) -> DecisionReranker:
    """The rerank role gets the unwrapped backend: a backend failure must fail the search, not keep candidates."""
    return DecisionReranker(for_role(decision_backend(model, inference), "memory.rerank"), fill_to_limit=fill_to_limit)
