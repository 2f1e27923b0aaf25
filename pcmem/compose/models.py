"""The local generation model every model role shares: loaded once per process, checked at startup."""

from __future__ import annotations

import threading
from pathlib import Path

from pcmem.config import InferenceConfig
from pcmem.errors import ConfigurationError
from pcmem.inference import presets
from pcmem.inference.llama_cpp import LlamaCppModel, require_llama_cpp
from pcmem.types.progress import Progress

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
    name = inference.model_name
    assert name is not None  # generation_model is set, so it names a model
    path = presets.resolve(name, progress)
    with _models_lock:
        if path not in _models:
            _models[path] = LlamaCppModel(path, model_id=inference.generation_model,
                                          n_threads=inference.threads)
        return _models[path]
