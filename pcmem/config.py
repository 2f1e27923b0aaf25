"""The validated settings a runtime is built with: :class:`RuntimeConfig` (search-time rerank policy and fusion) and
:class:`InferenceConfig` (the local generation model), read from the environment variables :mod:`pcmem.settings`
names (explicit argument > environment variable > default).

Apart from :mod:`pcmem.settings` because these are pydantic models: a command that needs neither (a ``pcmem search``
answered by the store's owner) must not pay pydantic's import (more than half of the
Python + DuckDB floor, see docs/benchmarks/speed.md) to find out where the store is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pcmem.errors import ConfigurationError
from pcmem.settings import INFERENCE_CONFIG_ENVS, RUNTIME_CONFIG_ENVS, SearchFusion, config_values

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class _Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    def __init__(self, /, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise ConfigurationError(f"{type(self).__name__}: {where}: {first['msg']}") from None

    @classmethod
    def _build(cls, values: dict[str, Any], source: str) -> Any:
        try:
            return cls(**values)
        except ConfigurationError as error:
            raise ConfigurationError(f"{source}: {error}") from None


class RuntimeConfig(_Settings):
    """Search-time policy of the runtime."""

    #: Rerank the coarse pool with the configured generation model (listwise policy). Default off.
    memory_rerank_enabled: bool = False
    #: How many coarse candidates a reranker sees (a reranked search's coarse pool is max(limit, this)).
    memory_rerank_candidate_limit: int = Field(default=30, ge=1, le=100)
    #: How a search that does not choose fuses its channels (``PCMEM_SEARCH_FUSION``); ``None``: the store's default,
    #: else the contract's ``rrf``.
    memory_search_fusion: SearchFusion | None = None

    @field_validator("memory_rerank_enabled", mode="before")
    @classmethod
    def _flag(cls, value: object) -> object:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError(f"expected true or false, got {value!r}")
        return value

    @field_validator("memory_search_fusion", mode="before")
    @classmethod
    def _fusion(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> RuntimeConfig:
        env = config_values(RUNTIME_CONFIG_ENVS, environ)
        return cls._build({**env, **{k: v for k, v in overrides.items() if v is not None}}, "runtime config")


class InferenceConfig(_Settings):
    """Which local model generates, and how long it may take."""

    #: ``provider:model-name``; provider ``llama-cpp`` takes a GGUF path or a preset (see ``pcmem models``).
    generation_model: str | None = None
    #: Per request; generation past it is aborted and the search raises InferenceTimeoutError.
    generation_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    #: Attempts per operation when the output does not match the schema.
    generation_max_requests: int = Field(default=2, ge=1, le=10)
    #: CPU threads llama.cpp uses for the generation model (``PCMEM_INFERENCE_THREADS``); None: every core.
    threads: int | None = Field(default=None, ge=1, le=512)

    @field_validator("generation_model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        provider, sep, name = value.strip().partition(":")
        provider, name = provider.strip(), name.strip()
        if not sep or not provider or not name:
            raise ValueError(f"expected provider:model-name, got {value!r}")
        return f"{provider}:{name}"

    @property
    def provider(self) -> str | None:
        return None if self.generation_model is None else self.generation_model.partition(":")[0]

    @property
    def model_name(self) -> str | None:
        return None if self.generation_model is None else self.generation_model.partition(":")[2]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> InferenceConfig:
        env = config_values(INFERENCE_CONFIG_ENVS, environ)
        return cls._build({**env, **{k: v for k, v in overrides.items() if v is not None}}, "inference config")
