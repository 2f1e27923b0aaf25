"""Throughput of one runtime used by several threads at once against one thread, measured in the same run (#30).

What a user with four threads does: each thread searches and remembers on one runtime (3 searches : 1 remember,
each remember a new entry of the same scope), with the embedder the user has. ``--embedder none`` measures pcmem's
own work alone (full-text search, no vectors); a real ONNX embedder (``minilm-l6-int8``) adds the query and
document embeddings, which run outside the GIL, and searches in hybrid mode.

Why rounds: the ratio of one 4-second run against another swung 0.72× to 1.31× on the same code. Every remember grows
the store, so the run measured last works on a bigger file; DuckDB checkpoints its log when it passes a size, which
costs one run a pause the other does not pay; and other jobs on a shared machine come and go. So the runs
alternate (1, N, N, 1, 1, N, ...) on one store, each pair gives a ratio, and the median of the pairs is the figure;
the load average is reported with it.

Run: ``python -m pcmem_bench.threads --rounds 5 --seconds 3`` (add ``--embedder minilm-l6-int8``; ``--kinds`` adds
the searches-only and remembers-only ratios). ``write_groups``: how many transactions committed several remembers
together (group commit) and how many remembers they held, over the whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pcmem
from pcmem.types.memory import NewEntry, RememberRequest
from pcmem.types.search import SearchMemoryRequest

#: One remember every this many operations of a thread: 3 searches : 1 remember.
WRITE_EVERY = 4

Operation = Callable[[int, int], object]


def _operation(memory: Any, kind: str, mode: str) -> Operation:
    """What operation ``i`` of thread ``worker`` does, for ``kind`` mixed, search or remember."""

    def run(worker: int, i: int) -> object:
        if kind == "remember" or (kind == "mixed" and i % WRITE_EVERY == WRITE_EVERY - 1):
            return memory.remember(NewEntry(text=f"thread {worker} note {i} about kiwis"))
        return memory.search(SearchMemoryRequest(query=f"kiwis note {i % 50}", mode=mode, limit=10))

    return run


def _throughput(operation: Operation, workers: int, seconds: float) -> tuple[float, float]:
    """(operations per second, process CPU ms per operation) of ``workers`` threads each running ``operation`` for
    ``seconds``. CPU per operation holds up when other jobs load the machine: work that threads repeat shows there."""
    done = [0] * workers
    stop = time.perf_counter() + seconds

    def loop(worker: int) -> None:
        i = 0
        while time.perf_counter() < stop:
            operation(worker, i)
            done[worker] += 1
            i += 1

    pool = [threading.Thread(target=loop, args=(worker,)) for worker in range(workers)]
    started, cpu = time.perf_counter(), time.process_time()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    operations = max(sum(done), 1)
    return operations / (time.perf_counter() - started), (time.process_time() - cpu) * 1000 / operations


def _ratios(operation: Operation, threads: int, seconds: float, rounds: int) -> dict[str, Any]:
    """``rounds`` pairs of runs, the order alternating (1 then N, N then 1, ...); the median pair's ratio."""
    ones, manys, ratios, cpu_ones, cpu_manys = [], [], [], [], []
    for round_ in range(rounds):
        order = (1, threads) if round_ % 2 == 0 else (threads, 1)
        measured = {workers: _throughput(operation, workers, seconds) for workers in order}
        ones.append(measured[1][0])
        manys.append(measured[threads][0])
        ratios.append(measured[threads][0] / measured[1][0])
        cpu_ones.append(measured[1][1])
        cpu_manys.append(measured[threads][1])
    return {"ops_per_second_1": round(statistics.median(ones), 1),
            f"ops_per_second_{threads}": round(statistics.median(manys), 1),
            "ratio": round(statistics.median(ratios), 2), "ratios": [round(r, 2) for r in ratios],
            "cpu_ms_per_op_1": round(statistics.median(cpu_ones), 2),
            f"cpu_ms_per_op_{threads}": round(statistics.median(cpu_manys), 2)}


def scaling(path: Path, *, seconds: float = 3.0, threads: int = 4, rounds: int = 3, embedder: str = "none",
            kinds: tuple[str, ...] = ("mixed",)) -> dict[str, Any]:
    """Throughput of ``threads`` threads vs 1 on one runtime over a 500-entry scope, per kind of load ("mixed",
    "search", "remember"), each under its name; the first kind's figures also at the top (``ratio``)."""
    from pcmem.embedding.presets import resolve

    chosen = None if embedder == "none" else resolve(embedder)
    mode = "fts" if chosen is None else "hybrid"
    load_before = os.getloadavg()[0]
    with pcmem.open(path, embedder=chosen) as runtime:
        memory = runtime.memory.for_scope("scaling")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=f"seed note {i} about kiwis and tea")
                                                      for i in range(500))))
        result: dict[str, Any] = {"threads": threads, "embedder": embedder, "mode": mode, "seconds_each": seconds,
                                  "rounds": rounds}
        for kind in kinds:
            operation = _operation(memory, kind, mode)
            _throughput(operation, 1, min(seconds, 1.0))  # warm the caches and the FTS extension first
            result[kind] = _ratios(operation, threads, seconds, rounds)
        groups = getattr(runtime.backend, "write_groups", None)  # DuckDB's group commit (write_groups.py)
        if groups is not None:
            result["write_groups"] = {"groups": groups.stats.groups, "writes_in_groups": groups.stats.grouped_writes,
                                      "fallbacks": groups.stats.fallbacks}
    result.update(result[kinds[0]])  # the first kind's figures at the top (the chaos campaign prints them)
    result["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pcmem_bench.threads", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0, help="each run's length")
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs (1 thread, N threads), order alternating")
    parser.add_argument("--embedder", default="none", help="none (full text) or a preset, e.g. minilm-l6-int8")
    parser.add_argument("--kinds", action="store_true", help="also searches only and remembers only")
    args = parser.parse_args(argv)
    kinds = ("mixed", "search", "remember") if args.kinds else ("mixed",)
    with tempfile.TemporaryDirectory(prefix="pcmem-threads-") as tmp:
        result = scaling(Path(tmp) / "threads.duckdb", seconds=args.seconds, threads=args.threads,
                         rounds=args.rounds, embedder=args.embedder, kinds=kinds)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
