"""The structured-generation port: a prompt in, a schema-valid object out, with usage."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from pcmem.types.usage import Usage


class GenerationRequest(BaseModel):
    """One schema-constrained generation at temperature 0.

    ``json_schema`` constrains decoding; ``output_model`` validates the parsed output (an output that parses but
    fails validation counts as invalid and is retried).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    system: str
    prompt: str
    json_schema: dict[str, Any]
    output_model: type[BaseModel]
    max_output_tokens: int = 256


class GenerationResult(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    value: BaseModel
    usage: Usage
    text: str


class StructuredGenerator(Protocol):
    """Generates JSON matching a schema.

    Raises :class:`~pcmem.errors.InferenceTimeoutError` when a request runs past the configured timeout (the
    generation is aborted), :class:`~pcmem.errors.InvalidInferenceOutputError` when every allowed attempt produced
    invalid output, and :class:`~pcmem.errors.InferenceUnavailableError` when the model cannot run.
    """

    @property
    def model_id(self) -> str:
        """What generates, e.g. ``llama-cpp:smollm2-135m-instruct``."""

    def generate(self, request: GenerationRequest) -> GenerationResult: ...
