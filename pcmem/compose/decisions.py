"""Wiring decision backends to their consumer roles: resolved once, at composition."""

from __future__ import annotations

import threading
import weakref

from pcmem.compose.models import load_model
from pcmem.config import InferenceConfig
from pcmem.decision.envelope import for_role
from pcmem.decision.llama_cpp import LlamaCppDecisionModel
from pcmem.decision.memo import MemoDecisionModel
from pcmem.decision.port import DecisionModel
from pcmem.inference.llama_cpp import LlamaCppModel
from pcmem.rerank.decision import DecisionReranker
from pcmem.types.progress import Progress

# Keyed by the model object itself, not ``id(model)``: an id is reused once a model is freed, so an id-keyed cache
# could hand out a backend bound to a dead model. Weak keys let a model and its backend go together; the lock makes
# "one backend per model" hold when two threads compose at once.
_backends: weakref.WeakKeyDictionary[LlamaCppModel, LlamaCppDecisionModel] = weakref.WeakKeyDictionary()
_backends_lock = threading.Lock()


def decision_backend(model: LlamaCppModel, inference: InferenceConfig) -> DecisionModel:
    """One decision backend per loaded model, shared by every role (rerank unwrapped, advisory roles wrapped)."""
    with _backends_lock:
        backend = _backends.get(model)
        if backend is None:
            backend = LlamaCppDecisionModel(model, timeout_seconds=inference.generation_timeout_seconds)
            _backends[model] = backend
        return backend


def write_gate_model(inference: InferenceConfig, progress: Progress | None = None) -> DecisionModel:
    """The decision backend of the configured local model, for the advisory write-gate role (``--write-gate``)."""
    return decision_backend(load_model(inference, progress), inference)


def decision_reranker(model: LlamaCppModel, inference: InferenceConfig, *, fill_to_limit: bool = False,
                      memo: MemoDecisionModel | None = None) -> DecisionReranker:
    """The rerank role gets the unwrapped backend: a backend failure must fail the search, not keep candidates.
    ``memo`` (benchmarks): a memo over this model's backend, shared by several decision policies of one run."""
    backend = for_role(decision_backend(model, inference), "memory.rerank")
    return DecisionReranker(backend if memo is None else memo, fill_to_limit=fill_to_limit)


def decision_memo(model: LlamaCppModel, inference: InferenceConfig) -> MemoDecisionModel:
    """A memo of the rerank role's decisions on ``model`` (deterministic: one forward pass at temperature 0)."""
    return MemoDecisionModel(for_role(decision_backend(model, inference), "memory.rerank"), model.model_id)
