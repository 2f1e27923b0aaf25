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
    """Prefill ``prompt`` from an empty cache, then greedily decode without a grammar; medians over ``repeats``."""
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
            produced = 0
            for _token in llm.generate(tokens, temp=0.0, reset=False):
                produced += 1
                if produced == decode_tokens:
                    break
            decode.append((time.perf_counter() - started) / produced)
        llm.reset()
    return Floor(statistics.median(prefill), statistics.median(decode))
