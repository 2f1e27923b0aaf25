"""What a write costs per entry, by how it arrives (#46): a single ``remember``, the same with an idempotency key (what
every write a client sends to the owner carries), remembers arriving together from several threads (group commit:
one transaction and one fsync for all that queued), and an import (one remember of many entries).

References measured in the same run, on the same file system: a durable SQLite FTS5 insert of one row (WAL,
synchronous=FULL: what ``writes ratio`` compares with), SQLite FTS5 inserting a batch of the import's size in one
transaction (per row), and DuckDB's own durable one-row write (a file opened as pcmem opens a store). The sides run in
interleaved rounds, so a machine whose load changes slows them alike; each figure is the median of its rounds, as
elapsed and as CPU time of this process (on a loaded machine the CPU time moves far less).

Run it as ``pcmem bench writes`` or ``python -m pcmem_bench.write_modes``; hash vectors (the model is not what is
measured).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pcmem
from pcmem.analysis import ANALYZERS
from pcmem.types.memory import NewEntry, RememberRequest
from pcmem_bench.perf import PrecomputedEmbedder, sentences
from pcmem_bench.writes import _duckdb_floor, _fts5_table, _load

Timed = tuple[float, float]  # (elapsed ms, CPU ms) per entry


def _per_entry(entries: int, work: Callable[[], object]) -> Timed:
    started, cpu = time.perf_counter(), time.process_time()
    work()
    return (time.perf_counter() - started) * 1000 / entries, (time.process_time() - cpu) * 1000 / entries


def _together(threads: int, per_thread: int, write: Callable[[int, int], object]) -> None:
    """``threads`` threads each writing ``per_thread`` times, released at once."""
    start = threading.Barrier(threads)

    def loop(worker: int) -> None:
        start.wait()
        for i in range(per_thread):
            write(worker, i)

    workers = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def measure(workdir: Path, *, size: int = 1000, rounds: int = 6, per_round: int = 20, threads: int = 4,
            batch: int = 500) -> dict[str, Any]:
    texts = sentences(size)
    store, reference = workdir / "modes.duckdb", workdir / "modes.sqlite"
    embedder = PrecomputedEmbedder()
    _load(store, texts, embedder)
    fts5 = _fts5_table(reference, texts)
    floor_write, floor_close = _duckdb_floor(workdir / "floor.duckdb")
    analyzer = ANALYZERS["v2"]
    step = iter(range(10**9))
    sides: dict[str, list[Timed]] = {name: [] for name in (
        "remember", "keyed_remember", "group", "import", "fts5_insert", "fts5_batch", "duckdb_floor")}

    def fts5_rows(count: int) -> None:
        fts5.execute("BEGIN")
        fts5.executemany("INSERT INTO docs(body, scope) VALUES (?, 's0')",
                         [(" ".join(analyzer.analyze(f"A fresh note written at step {next(step)}.")),)
                          for _ in range(count)])
        fts5.execute("COMMIT")

    groups_before = None
    with pcmem.open(store, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s0")
        memory.remember("warm up")
        stats = getattr(runtime.backend, "write_groups", None)
        groups_before = (stats.stats.groups, stats.stats.grouped_writes) if stats is not None else None
        grouped = 0
        for _ in range(rounds):
            for _ in range(per_round):
                sides["remember"].append(_per_entry(1, lambda: memory.remember(
                    f"A fresh note written at step {next(step)}.")))
                sides["keyed_remember"].append(_per_entry(1, lambda: memory.remember(
                    f"A fresh note written at step {next(step)}.", idempotency_key=uuid.uuid4().hex)))
                sides["fts5_insert"].append(_per_entry(1, lambda: fts5_rows(1)))
                sides["duckdb_floor"].append(_per_entry(1, floor_write))
            sides["group"].append(_per_entry(threads * per_round, lambda: _together(
                threads, per_round, lambda w, i: memory.remember(f"Thread {w} note {i} at step {next(step)}."))))
            grouped += threads * per_round
            sides["import"].append(_per_entry(batch, lambda: memory.remember(RememberRequest(entries=tuple(
                NewEntry(text=f"An imported note written at step {next(step)}.") for _ in range(batch))))))
            sides["fts5_batch"].append(_per_entry(batch, lambda: fts5_rows(batch)))
        group_stats = None
        if stats is not None and groups_before is not None:
            group_stats = {"transactions_with_several": stats.stats.groups - groups_before[0],
                           "remembers_in_them": stats.stats.grouped_writes - groups_before[1],
                           "remembers_from_threads": grouped}
    fts5.close()
    floor_close()
    result: dict[str, Any] = {"size": size, "threads": threads, "import_batch": batch}
    for name, timed in sides.items():
        result[f"{name}_ms"] = round(statistics.median(wall for wall, _ in timed), 3)
        result[f"{name}_cpu_ms"] = round(statistics.median(cpu for _, cpu in timed), 3)
    single, single_cpu = result["fts5_insert_ms"], result["fts5_insert_cpu_ms"]
    for name in ("remember", "keyed_remember", "group", "import"):
        result[f"{name}_vs_fts5_insert"] = round(result[f"{name}_ms"] / single, 2)
        result[f"{name}_cpu_vs_fts5_insert"] = round(result[f"{name}_cpu_ms"] / single_cpu, 2)
        result[f"{name}_vs_duckdb_floor"] = round(result[f"{name}_ms"] / result["duckdb_floor_ms"], 2)
    result["import_vs_fts5_batch"] = round(result["import_ms"] / result["fts5_batch_ms"], 2)
    result["keyed_vs_plain"] = round(result["keyed_remember_ms"] / result["remember_ms"], 2)
    result["keyed_cpu_vs_plain"] = round(result["keyed_remember_cpu_ms"] / result["remember_cpu_ms"], 2)
    result["write_groups"] = group_stats
    result["load_average"] = round(os.getloadavg()[0], 1)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pcmem_bench.write_modes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1000, help="entries in the store before the writes")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-round", type=int, default=20)
    parser.add_argument("--threads", type=int, default=4, help="threads remembering together (group commit)")
    parser.add_argument("--batch", type=int, default=500, help="entries per import")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pcmem-write-modes-") as tmp:
        print(json.dumps(measure(Path(tmp), size=args.size, rounds=args.rounds, per_round=args.per_round,
                                 threads=args.threads, batch=args.batch)))


if __name__ == "__main__":
    main()
