"""llama.cpp (llama-cpp-python) adapters: one loaded model, shared and serialised, with a real timeout.

The timeout is enforced inside llama.cpp: an abort callback checked during every ``llama_decode`` stops prompt
processing and token generation once the deadline passes, so a slow request is cut off, not merely ignored.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pcmem import settings
from pcmem.errors import (
    ConfigurationError,
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
)
from pcmem.inference.port import GenerationRequest, GenerationResult
from pcmem.settings import ENV_GENERATION_TIMEOUT
from pcmem.types.usage import Usage

DEFAULT_CONTEXT = 8192

_loading = threading.Lock()


def load_llama(llama_cpp: Any, **kwargs: Any) -> Any:
    """``llama_cpp.Llama(**kwargs)``, without llama.cpp's extra weight buffers where the build has AMX.

    A llama.cpp built for a CPU with AMX (``-DGGML_NATIVE=ON``, the default of a source build, on a Sapphire Rapids
    Xeon) places weights in its AMX buffer type, and the first decode then dies with SIGSEGV (seen with
    llama-cpp-python 0.3.36 on a virtual machine that reports ``amx_int8``); with extra buffer types off the same build
    decodes correctly. ``Llama()`` takes no switch for it, so the default model parameters are amended while the
    model loads (under a lock: the function is a module global).
    """
    if "AMX_INT8 = 1" not in llama_cpp.llama_print_system_info().decode("utf-8", "replace"):
        return llama_cpp.Llama(**kwargs)
    bindings = llama_cpp.llama_cpp  # the module Llama() reads its defaults from
    with _loading:
        default = bindings.llama_model_default_params

        def without_extra_buffers() -> Any:
            params = default()
            params.use_extra_bufts = False
            return params

        bindings.llama_model_default_params = without_extra_buffers
        try:
            return llama_cpp.Llama(**kwargs)
        finally:
            bindings.llama_model_default_params = default


def require_llama_cpp(needed_for: str = "reranking with a local model") -> Any:
    """Import llama_cpp (its threads waiting passively: :func:`pcmem.settings.wait_passively_in_openmp`) or explain
    which extra installs it."""
    settings.wait_passively_in_openmp()
    try:
        import llama_cpp
    except ImportError as error:
        raise ConfigurationError(
            f"{needed_for} needs llama-cpp-python: pip install 'pcmem[llm]' "
            "(it builds from source, ~9 minutes on 2 cores the first time)"
        ) from error
    return llama_cpp


class LlamaCppModel:
    """A GGUF model loaded once. ``session()`` serialises access and arms the deadline."""

    def __init__(self, path: Path, *, model_id: str, n_ctx: int = DEFAULT_CONTEXT, n_threads: int | None = None) -> None:
        llama_cpp = require_llama_cpp()
        self.model_id = model_id
        self.path = path
        self._lock = threading.Lock()
        self._deadline: float | None = None
        try:
            self.llm = load_llama(
                llama_cpp, model_path=str(path), n_ctx=n_ctx, n_threads=n_threads or os.cpu_count() or 1, verbose=False, seed=0
            )
        except Exception as error:  # llama.cpp reports a bad file as ValueError/RuntimeError
            raise ConfigurationError(f"llama.cpp cannot load {path}: {error}") from error
        # llama.cpp prints some warnings (e.g. after an aborted decode) straight to stderr; pcmem reports every
        # failure as a typed error instead, so its native log stays quiet (Llama() resets this level on load).
        logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL + 1)
        # Keep a reference to the ctypes callback: llama.cpp holds only a raw pointer to it.
        self._abort_callback = llama_cpp.ggml_abort_callback(self._should_abort)
        llama_cpp.llama_set_abort_callback(self.llm._ctx.ctx, self._abort_callback, None)
        self._formatter = _chat_formatter(llama_cpp, self.llm)
        self._grammars: dict[str, Any] = {}
        #: Tokens of the last prompt that were reused from the KV cache (for benchmarks and tests).
        self.last_prefix = 0
        #: Where the KV cache's segments end, when the decision path filled it segment by segment (see
        #: ``pcmem.decision.llama_cpp``); empty when anything else filled it, so nothing else is reused as a segment.
        self.cached_segments: tuple[int, ...] = ()

    def format_chat(self, system: str, user: str) -> str:
        """The model's own chat template, ending where the assistant's answer starts."""
        if self._formatter is None:
            return f"{system}\n\n{user}\n"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self._formatter(messages=messages).prompt

    def grammar(self, json_schema: dict[str, Any]) -> Any:
        """A compiled grammar for ``json_schema``, cached: compiling costs more than a short generation."""
        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_json_schema(key, verbose=False)
        return self._grammars[key]

    def _should_abort(self, _data: object) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline

    @contextmanager
    def session(self, timeout_seconds: float) -> Iterator[Any]:
        """Exclusive use of the model with a deadline; an abort or crash becomes a typed inference error."""
        with self._lock:
            self._deadline = time.monotonic() + timeout_seconds
            try:
                yield self.llm
            except Exception as error:
                timed_out = self._should_abort(None)
                self.llm.reset()  # an aborted decode leaves a partial KV cache: never reuse it as a prefix
                self.cached_segments = ()
                if timed_out:
                    raise InferenceTimeoutError(
                        f"{self.model_id} did not finish within {timeout_seconds:g} s; generation was aborted "
                        f"(raise {ENV_GENERATION_TIMEOUT} to allow longer)"
                    ) from error
                raise InferenceUnavailableError(f"{self.model_id} failed: {error}") from error
            finally:
                self._deadline = None


def _chat_formatter(llama_cpp: Any, llm: Any) -> Any:
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    return llama_cpp.llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llm.detokenize([llm.token_eos()]).decode(errors="ignore"),
        bos_token=llm.detokenize([llm.token_bos()]).decode(errors="ignore"),
    )


class LlamaCppGenerator:
    """A :class:`~pcmem.inference.port.StructuredGenerator` on llama.cpp: grammar-constrained JSON, temperature 0."""

    def __init__(self, model: LlamaCppModel, *, timeout_seconds: float = 30.0, max_requests: int = 2) -> None:
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.max_requests = max_requests
        self.last_prompt = ""

    @property
    def model_id(self) -> str:
        return self.model.model_id

    def generate(self, request: GenerationRequest) -> GenerationResult:
        usage = Usage()
        problem = ""
        for _attempt in range(self.max_requests):
            text, attempt_usage = self._complete(request)
            usage = usage + attempt_usage
            try:
                value = request.output_model.model_validate(json.loads(text))
            except (json.JSONDecodeError, ValidationError) as error:
                problem = str(error).splitlines()[0]
                continue
            return GenerationResult(value=value, usage=usage, text=text)
        raise InvalidInferenceOutputError(
            f"{self.model_id} gave no valid output in {self.max_requests} request(s): {problem}"
        )

    def _complete(self, request: GenerationRequest) -> tuple[str, Usage]:
        prompt = self.model.format_chat(request.system, request.prompt)
        self.last_prompt = prompt
        grammar = self.model.grammar(request.json_schema)
        with self.model.session(self.timeout_seconds) as llm:
            # Every prompt is evaluated from the start: reusing whatever prefix the previous request left in the KV
            # cache would split the evaluation differently, and batch boundaries change the floats, so the output
            # would depend on which request came before. (The system text is a small part of a listwise prompt.)
            llm.reset()
            self.model.cached_segments = ()
            response = llm.create_completion(
                prompt, grammar=grammar, temperature=0.0, max_tokens=request.max_output_tokens
            )
        text = response["choices"][0]["text"] or ""
        counts = response.get("usage") or {}
        return text, Usage(requests=1, input_tokens=counts.get("prompt_tokens", 0),
                           output_tokens=counts.get("completion_tokens", 0))
