"""The llama.cpp floor: how long the same tokens take when llama.cpp does nothing but prefill and decode them."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from pcmem.inference.llama_cpp import LlamaCppModel


@dataclass(frozen=True)
class Floor:
    prefill_tokens_per_s: float
    decode_seconds_per_token: float

    def seconds(self, prompt_tokens: int, output_tokens: int) -> float:
        return prompt_tokens / self.prefill_tokens_per_s + output_tokens * self.decode_seconds_per_token


def measure_floor(model: LlamaCppModel, prompt: str, decode_tokens: int = 24, repeats: int = 3) -> Floor:
    """Prefill ``prompt`` from an empty cache, then decode greedily one token per forward pass (argmax of the
    logits, no grammar, no sampler); medians over ``repeats``."""
    import llama_cpp
    import numpy as np

    llm = model.llm
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    prefill, decode = [], []
    with model.session(3600):
        for _ in range(repeats):
            llm.reset()
            started = time.perf_counter()
            llm.eval(tokens)
            prefill.append(len(tokens) / (time.perf_counter() - started))
            started = time.perf_counter()
            for _ in range(decode_tokens):
                logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),))
                llm.eval([int(logits.argmax())])
            decode.append((time.perf_counter() - started) / decode_tokens)
        llm.reset()
    return Floor(statistics.median(prefill), statistics.median(decode))


def eval_seconds(model: LlamaCppModel, tokens: list[int], cached: int) -> float:
    """The bare forward pass over ``tokens[cached:]`` on top of an already evaluated prefix ``tokens[:cached]``."""
    llm = model.llm
    with model.session(3600):
        llm.n_tokens = cached
        started = time.perf_counter()
        llm.eval(tokens[cached:])
        return time.perf_counter() - started
