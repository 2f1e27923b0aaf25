"""Composition of the rerank stage (RFC 0080 / RFC 1745): which reranker a runtime uses, decided at startup.

- An injected ``MemoryReranker`` always applies, even when ``memory_rerank_enabled`` is false.
- ``memory_rerank_enabled`` without an injected reranker needs ``generation_model``; it builds the listwise policy.
- A missing llama.cpp, an unknown provider, a missing or corrupt model file: ConfigurationError now, not at the
  first search.
"""

from __future__ import annotations

import threading
from pathlib import Path

from pcmem.settings import InferenceConfig, RuntimeConfig
from pcmem.errors import ConfigurationError
from pcmem.inference import presets
from pcmem.inference.llama_cpp import LlamaCppGenerator, LlamaCppModel, require_llama_cpp
from pcmem.types.progress import Progress
from pcmem.rerank.listwise import ListwiseReranker
from pcmem.rerank.port import MemoryReranker
from pcmem.types.rerank import RerankPolicy

PROVIDERS = ("llama-cpp",)

_models: dict[Path, LlamaCppModel] = {}
_models_lock = threading.Lock()


def load_model(inference: InferenceConfig, progress: Progress | None = None) -> LlamaCppModel:
    """The configured generation model, loaded once per process and shared by every role that uses it."""
    if inference.generation_model is None:
        raise ConfigurationError(
            "no generation model: set POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL=llama-cpp:<preset-or-path> "
            f"(presets: {', '.join(presets.PRESETS)})"
        )
    if inference.provider not in PROVIDERS:
        raise ConfigurationError(f"unknown inference provider {inference.provider!r}; available: {', '.join(PROVIDERS)}")
    require_llama_cpp()
    path = presets.resolve(inference.model_name, progress)
    with _models_lock:
        if path not in _models:
            _models[path] = LlamaCppModel(path, model_id=inference.generation_model)
        return _models[path]


def build_reranker(
    policy: RerankPolicy, inference: InferenceConfig, progress: Progress | None = None
) -> MemoryReranker:
    """A reranker of ``policy`` on the configured local model (the CLI's ``--rerank``)."""
    model = load_model(inference, progress)
    if policy == "listwise":
        generator = LlamaCppGenerator(
            model, timeout_seconds=inference.generation_timeout_seconds, max_requests=inference.generation_max_requests
        )
        return ListwiseReranker(generator)
    from pcmem.compose.decisions import decision_reranker

    return decision_reranker(model, inference, fill_to_limit=policy == "decision-fill")


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
