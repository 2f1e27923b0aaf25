"""``pcmem bench embed-batching``: would EmbeddingGemma ingest faster with several texts per llama.cpp call (#46 item 1)?

pcmem embeds one text per ``Llama.embed`` call. This measures, on the same texts in interleaved rounds, that (the
reference) against ``batch`` texts per call (a context with ``n_seq_max = batch``, as batching needs): elapsed and CPU
time per text, and what batching does to the vectors — the lowest and median cosine between each text's batched and
one-at-a-time vector, and each way's agreement with the preset's stored reference vectors (what
``pcmem models prepare`` accepts: at least ``MIN_REFERENCE_COSINE``). Then the floor: CPU time per token of one
thread on texts of growing length (one call each), which says what any batching could save (the fixed part) and
what it cannot (the per-token part, the model's own arithmetic).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from pcmem.embedding import gemma_preset as gemma
from pcmem.embedding import reference
from pcmem.inference.llama_cpp import load_llama, require_llama_cpp
from pcmem.settings import cache_dir


def _model(batch: int, threads: int) -> Any:
    llama_cpp = require_llama_cpp("pcmem bench embed-batching")
    return load_llama(llama_cpp, model_path=str(gemma.verified_path(cache_dir())), embedding=True, n_ctx=gemma.N_CTX,
                      n_batch=gemma.N_CTX, n_ubatch=gemma.N_CTX, n_threads=threads, n_seq_max=batch, verbose=False)


def _unit(rows: Sequence[Sequence[float]]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _embed(model: Any, prompts: Sequence[str], batch: int) -> np.ndarray:
    if batch == 1:
        return _unit([model.embed(prompt, truncate=True) for prompt in prompts])
    return _unit([row for start in range(0, len(prompts), batch)
                  for row in model.embed(list(prompts[start:start + batch]), truncate=True)])


def _timed(model: Any, prompts: Sequence[str], batch: int) -> tuple[np.ndarray, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    vectors = _embed(model, prompts, batch)
    return vectors, (time.perf_counter() - started) * 1000 / len(prompts), (time.process_time() - cpu) * 1000 / len(
        prompts)


def _reference_agreement(model: Any, batch: int) -> float:
    stored = reference.stored_vectors(gemma.REFERENCE_VECTORS)
    prompts = [gemma.DOCUMENT_PROMPT.format(text=text) for text in reference.REFERENCE_SENTENCES]
    return round(reference.min_cosine(_embed(model, prompts, batch), stored["documents"]), 6)


def per_token_floor(texts: Sequence[str]) -> list[dict[str, float]]:
    """One thread, one call per text: CPU ms per call for prompts of growing length (the same words repeated)."""
    model = _model(1, 1)
    words = " ".join(texts).split()
    rows = []
    for count in (1, 8, 32, 64, 128):
        prompt = gemma.DOCUMENT_PROMPT.format(text=" ".join(words[:count]))
        tokens = len(model.tokenize(prompt.encode("utf-8")))
        model.embed(prompt)
        cpu = time.process_time()
        for _ in range(3):
            model.embed(prompt)
        rows.append({"tokens": tokens, "cpu_ms": round((time.process_time() - cpu) * 1000 / 3, 1)})
    return rows


def run(texts: Sequence[str], *, batch: int = 8, rounds: int = 4, threads: int | None = None) -> dict[str, Any]:
    """``texts`` split over ``rounds`` interleaved rounds of one-at-a-time vs ``batch`` per call."""
    threads = threads or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    prompts = [gemma.DOCUMENT_PROMPT.format(text=text) for text in texts]
    single, batched = _model(1, threads), _model(batch, threads)
    single.embed(prompts[0])
    batched.embed(prompts[:2])
    per_round = max(1, len(prompts) // rounds)
    sides: dict[str, list[tuple[float, float]]] = {"one_per_call": [], "batched": []}
    cosines: list[float] = []
    for number in range(rounds):
        part = prompts[number * per_round:(number + 1) * per_round]
        order = ("one_per_call", "batched") if number % 2 == 0 else ("batched", "one_per_call")
        found: dict[str, np.ndarray] = {}
        for side in order:
            vectors, wall, cpu = _timed(single if side == "one_per_call" else batched, part,
                                        1 if side == "one_per_call" else batch)
            found[side] = vectors
            sides[side].append((wall, cpu))
        cosines += np.sum(found["one_per_call"] * found["batched"], axis=1).tolist()
    result: dict[str, Any] = {"texts": per_round * rounds, "batch": batch, "threads": threads, "rounds": rounds,
                              "tokens_per_text": round(statistics.mean(len(single.tokenize(p.encode("utf-8")))
                                                                       for p in prompts), 1)}
    for side, timed in sides.items():
        result[f"{side}_ms_per_text"] = round(statistics.median(wall for wall, _ in timed), 1)
        result[f"{side}_cpu_ms_per_text"] = round(statistics.median(cpu for _, cpu in timed), 1)
    result["speedup"] = round(result["one_per_call_ms_per_text"] / result["batched_ms_per_text"], 2)
    result["cpu_speedup"] = round(result["one_per_call_cpu_ms_per_text"] / result["batched_cpu_ms_per_text"], 2)
    result["cosine_batched_vs_one_min"] = round(min(cosines), 6)
    result["cosine_batched_vs_one_median"] = round(statistics.median(cosines), 6)
    result["reference_agreement_one_per_call"] = _reference_agreement(single, 1)
    result["reference_agreement_batched"] = _reference_agreement(batched, batch)
    from pcmem.embedding.build.gemma import MIN_REFERENCE_COSINE

    result["reference_bar"] = MIN_REFERENCE_COSINE
    del single, batched
    result["per_token_floor_one_thread"] = per_token_floor(texts)
    result["load_average"] = round(os.getloadavg()[0], 1)
    return result
