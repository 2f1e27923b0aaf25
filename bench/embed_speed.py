"""``pcmem bench embed-speed``: what pcmem's EmbeddingGemma embedding costs over the bare llama.cpp call (issue #30).

The floor is ``Llama.embed`` on the very prompt pcmem builds, on the model pcmem loaded (same threads, same context),
so the ratio is pcmem's own overhead (lock, prompt, normalisation). Rounds interleave the two so that a change in the
machine's load hits both alike; the load average is recorded with every figure, as the machine is shared. With
``busy`` > 0 the same rounds run again while that many processes spin on the CPU (a competing job), for the slowdown.
Then the same texts through a store: a ``remember`` (the ingest path: embed + one write) and a vector search (the
query path: embed the query + scan).
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pcmem.compose.runtime import SyncRuntime
from pcmem.embedding import gemma_preset as gemma
from pcmem.settings import cache_dir, openmp_wait_policy
from pcmem.types.search import SearchMemoryRequest

_MEDIUM = ("[1:56 pm on 8 May, 2023] Caroline: I went to the LGBTQ support group yesterday and it was so powerful, "
           "the stories really inspired me to keep going with my counseling plans.")
_LONG_UNIT = ("Ana told Ben that the pottery class moved to Thursdays, that Biscuit learned to sit, and that the "
              "team's build sign-off now goes through the release checklist before every Friday deploy. ")
_LIMIT = 8192 - 8  # an entry's text limit, less the " #n" that makes each remembered copy distinct
#: Short (a few tokens), medium (a ~45-token LoCoMo turn) and 8 KB texts.
TEXTS: Mapping[str, str] = {"short": "Ben likes pottery.", "medium": _MEDIUM,
                            "8KB": (_LONG_UNIT * (_LIMIT // len(_LONG_UNIT) + 1))[:_LIMIT]}


def _spin() -> None:  # a competing busy process
    while True:
        pass


def _median_ms(call: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def embedding_rounds(embedder: gemma.GemmaEmbedder, rounds: int) -> dict[str, dict[str, float]]:
    """Per text: bare ``Llama.embed`` and pcmem's ``embed_documents`` medians (interleaved, one call each per round)."""
    llm = embedder.llama()
    out = {}
    for name, text in TEXTS.items():
        prompt = gemma.DOCUMENT_PROMPT.format(text=text)
        llm.embed(prompt, truncate=True)  # warm
        bare, ours = [], []
        for _ in range(rounds):
            bare.append(_median_ms(lambda: llm.embed(prompt, truncate=True), 1))
            ours.append(_median_ms(lambda: embedder.embed_documents([text]), 1))
        out[name] = {"bare_ms": statistics.median(bare), "pcmem_ms": statistics.median(ours),
                     "ratio": statistics.median(ours) / statistics.median(bare), "load": os.getloadavg()[0]}
    return out


def store_rounds(embedder: gemma.GemmaEmbedder, rounds: int) -> dict[str, dict[str, float]]:
    """Per text: ``remember`` of one entry (embed + write) and a vector search with it as the query, medians."""
    out = {}
    with tempfile.TemporaryDirectory() as scratch, SyncRuntime.open(Path(scratch) / "s.duckdb", embedder=embedder) as rt:
        memory = rt.memory.for_scope("speed")
        for name, text in TEXTS.items():
            count = iter(range(10**6))
            remember = _median_ms(lambda: memory.remember(f"{text} #{next(count)}"), rounds)
            queries = iter(range(10**6))  # a new query each time: the embedder's query memo would hide the cost
            search = _median_ms(lambda: memory.search(
                SearchMemoryRequest(query=f"{text[:4000]} #{next(queries)}", limit=10, mode="vector")), rounds)
            out[name] = {"remember_ms": remember, "vector_search_ms": search, "load": os.getloadavg()[0]}
    return out


def run(rounds: int = 7, busy: int = 1, threads: int | None = None) -> dict[str, Any]:
    root = cache_dir()
    embedder = gemma.GemmaEmbedder(lambda: gemma.verified_path(root), threads)
    result: dict[str, Any] = {"cpu_count": os.cpu_count(), "threads": embedder.thread_count,
                              "load_before": os.getloadavg()[0], "alone": embedding_rounds(embedder, rounds)}
    result["omp_wait_policy"] = openmp_wait_policy()  # as llama.cpp loaded with it
    if busy:
        spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
        for process in spinners:
            process.start()
        try:
            result["with_busy"] = embedding_rounds(embedder, rounds)
        finally:
            for process in spinners:
                process.terminate()
                process.join()
        result["busy_processes"] = busy
        result["slowdown_with_busy"] = {name: result["with_busy"][name]["pcmem_ms"] / row["pcmem_ms"]
                                        for name, row in result["alone"].items()}
    result["store"] = store_rounds(embedder, rounds)
    return result
