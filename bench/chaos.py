"""``pcmem bench chaos``: the issue-16 campaign — use the store the way real programs do, and hostile input, and count.

Every scenario reports the same figures: operations run, writes acknowledged (the call returned), acknowledged
writes found afterwards (each acknowledged citation read back exactly: must be equal), typed errors by class (pcmem
errors: expected under contention, e.g. a compare-and-swap conflict), untyped errors (anything else, a traceback:
must be 0), and ``check`` after the scenario (must pass).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pcmem
from pcmem.errors import PcmemError, StoreWALError
from pcmem.store.duckdb.wal import damaged_wal_copies
from pcmem.types.memory import Citation, NewEntry, ReactivateRequest, RetireRequest, ReviseRequest
from pcmem.types.search import SearchMemoryRequest
from pcmem_bench import crash, creation_race, file_chaos, programs
from pcmem_bench import threads as thread_bench
from pcmem_bench.tally import Tally, attempt, verify


def _mixed_worker(memory: Any, worker: int, count: int, seed: int) -> tuple[Tally, list[Citation]]:
    """remember 35% / search 30% / revise (CAS) 20% / read 10% / retire+reactivate 5% on one scope."""
    tally = Tally("worker")
    acknowledged: list[Citation] = []
    mine: list[str] = []
    rng = random.Random(seed * 1000 + worker)
    for i in range(count):
        roll = rng.random()
        if roll < 0.35 or not mine:
            result = attempt(tally, lambda: memory.remember(NewEntry(entry_id=f"w{worker}-{i}",
                                                                      text=f"worker {worker} kiwi note {i}")))
            if result is not None:
                mine.append(f"w{worker}-{i}")
                acknowledged.append(result.citations[0])
        elif roll < 0.65:
            attempt(tally, lambda: memory.search(SearchMemoryRequest(query=f"kiwi note {i}", mode="fts", limit=5)))
        elif roll < 0.85:
            target = rng.choice(mine)

            def revise() -> Any:
                head = memory.head()
                return memory.revise(ReviseRequest(entry_id=target, text=f"revised {i} kiwi by {worker}",
                                                   expected_revision=head.revision))

            result = attempt(tally, revise)
            if result is not None and not result.unchanged:
                acknowledged.append(result.citations[0])
        elif roll < 0.95:
            attempt(tally, lambda: memory.get_entry(rng.choice(mine)))
        else:
            target = rng.choice(mine)
            def retire() -> Any:
                return memory.retire(RetireRequest(entry_id=target, expected_revision=memory.head().revision))

            def reactivate() -> Any:
                return memory.reactivate(ReactivateRequest(entry_id=target, expected_revision=memory.head().revision))

            attempt(tally, retire)
            attempt(tally, reactivate)
    return tally, acknowledged


def threads_scenario(path: Path, *, threads: int, ops: int, runtimes: int = 1) -> Tally:
    tally = Tally(f"in-process: {threads} threads x {ops} ops, {runtimes} runtime(s)")
    started = time.perf_counter()
    opened = [pcmem.open(path, embedder=None) for _ in range(runtimes)]
    try:
        with ThreadPoolExecutor(threads) as pool:
            runs = [pool.submit(_mixed_worker, opened[w % runtimes].memory.for_scope("chaos"), w, ops, 1)
                    for w in range(threads)]
            results = [run.result() for run in runs]
    finally:
        for runtime in opened:
            runtime.close()
    acknowledged = [citation for _, cites in results for citation in cites]
    for worker_tally, _ in results:
        worker_tally.scenario = tally.scenario
        tally.merge(worker_tally)
    tally.acknowledged = len(acknowledged)
    verify(path, "chaos", acknowledged, tally)
    tally.seconds = time.perf_counter() - started
    return tally


def async_scenario(path: Path, *, tasks: int, ops: int) -> Tally:
    tally = Tally(f"async: {tasks} concurrent tasks x {ops} ops")
    started = time.perf_counter()
    acknowledged: list[Citation] = []

    async def task(memory: Any, number: int) -> None:
        for i in range(ops):
            tally.operations += 1
            try:
                if i % 2 == 0:
                    result = await memory.remember(NewEntry(text=f"task {number} note {i}"))
                    acknowledged.append(result.citations[0])
                else:
                    await memory.search(SearchMemoryRequest(query=f"note {i}", mode="fts"))
            except PcmemError as error:
                tally.typed_errors[type(error).__name__] += 1
            except Exception as error:  # noqa: BLE001
                tally.untyped_errors.append(f"{type(error).__name__}: {error}")

    async def main() -> None:
        async with pcmem.open_async(path, embedder=None) as runtime:
            memory = runtime.memory.for_scope("chaos")
            await asyncio.gather(*(task(memory, n) for n in range(tasks)))

    asyncio.run(main())
    tally.acknowledged = len(acknowledged)
    verify(path, "chaos", acknowledged, tally)
    tally.seconds = time.perf_counter() - started
    return tally


# --- several processes ---------------------------------------------------------------------------------------------


def processes_scenario(path: Path, *, ops: int) -> Tally:
    tally = Tally(f"processes: 2 writers + 1 searcher (one owner, its clients), {ops} ops each")
    started = time.perf_counter()
    pcmem.open(path, embedder=None).close()
    roles = [("write", "a"), ("write", "b"), ("search", "s")]
    workers = [subprocess.Popen(programs.command("chaos_worker", str(path), role, name, str(ops)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for role, name in roles]
    acknowledged = []
    for worker in workers:
        out, err = worker.communicate(timeout=1800)
        if worker.returncode != 0 or "Traceback" in err:
            tally.untyped_errors.append(f"worker exit {worker.returncode}: {err.strip()[-300:]}")
        for line in out.splitlines():
            kind, *rest = json.loads(line)
            tally.operations += 1
            if kind == "ack":
                acknowledged.append(Citation(**rest[0]))
            elif kind == "typed":
                tally.typed_errors[rest[0]] += 1
            elif kind == "untyped":
                tally.untyped_errors.append(f"{rest[0]}: {rest[1]}")
    tally.acknowledged = len(acknowledged)
    verify(path, "chaos", acknowledged, tally)
    tally.seconds = time.perf_counter() - started
    return tally


# --- SIGKILL --------------------------------------------------------------------------------------------------------


def _kill_at_random(command: list[str], rng: random.Random, low: float, high: float) -> bool:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(low, high))
    midway = process.poll() is None
    if midway:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return midway


def reindex_trial(path: Path, seed: int, entries: int = 600) -> Tally:
    tally = Tally("reindex")
    rng = random.Random(seed)
    subprocess.run(programs.command("reindex_worker", str(path), "seed", str(entries)), check=True,
                   capture_output=True, timeout=600)
    tally.acknowledged += entries
    _kill_at_random(programs.command("reindex_worker", str(path), "switch"), rng, 0.3, 3.0)
    tally.operations += 1
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("chaos")
        tally.found += len(memory.list().entries)
        profiles = (runtime.backend.embedding_profile(), runtime.backend.pending_embedding_profile())
        report = crash._file_backend(runtime).check()
    tally.checks += 1
    if not report.ok:
        tally.checks_failed.append("; ".join(report.problems))
    if profiles[0] is None or profiles[0].model_id not in ("bench/old", "bench/new"):
        tally.checks_failed.append(f"after a killed switch the active profile is {profiles[0]}")
    return tally


def writable_trial(path: Path, seed: int) -> Tally:
    """Kill a keyed writer, then revise/retire/upsert/forget every pre-crash entry (see crash.writable_trial)."""
    tally = Tally("pre-crash entries writable")
    cli = str(Path(sys.executable).with_name("pcmem"))
    written, changed, problems = crash.writable_trial(path, seed, cli=cli if Path(cli).exists() else None)
    tally.operations += written + 1
    tally.acknowledged += written
    tally.found += changed
    tally.checks += 1
    tally.checks_failed += problems
    return tally


def damaged_wal_trial(path: Path, seed: int) -> Tally:
    """Kill a writer (its log stays behind), damage the log: a damaged header must be refused (StoreWALError), a log
    cut short — what a kill inside a commit leaves — opens with its complete transactions and a copy of it kept."""
    tally = Tally("damaged WAL")
    rng = random.Random(seed)
    writer = subprocess.Popen(programs.command("stream_writer", str(path)), stdout=subprocess.PIPE,
                              text=True)
    assert writer.stdout is not None
    for _ in range(rng.randint(2, 6)):
        if not writer.stdout.readline():
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    wal = path.with_name(path.name + ".wal")
    tally.operations += 1
    if not wal.exists() or wal.stat().st_size < 64:
        tally.notes.append("no leftover log to damage (the writer's log was checkpointed)")
        return tally
    data = wal.read_bytes()
    cut = rng.random() < 0.5
    damaged = data[: len(data) // 2] if cut else b"\0" * 16 + data[16:]
    wal.write_bytes(damaged)
    try:
        pcmem.open(path, embedder=None).close()
        if not cut:
            tally.untyped_errors.append("a log with a damaged header was opened")
        elif [copy.read_bytes() for copy in damaged_wal_copies(path)] != [damaged]:
            tally.untyped_errors.append("a log cut short was opened without keeping a copy of it")
    except StoreWALError as error:
        if cut:
            tally.untyped_errors.append(f"a log cut short (a kill inside a commit) was refused: {error}")
        tally.typed_errors[type(error).__name__] += 1
        wal.rename(wal.with_name(wal.name + ".damaged"))  # what the message tells the user to do
    with pcmem.open(path, embedder=None) as runtime:
        report = crash._file_backend(runtime).check()
    tally.checks += 1
    if not report.ok:
        tally.checks_failed.append("; ".join(report.problems))
    return tally


def kill_scenario(workdir: Path, trials: int) -> Tally:
    """``trials`` rounds of: a killed remember/revise stream, a killed import, a killed keyed writer in each mode
    followed by revise/retire/upsert/forget of every pre-crash entry (library and CLI), a killed embedder switch,
    and a damaged log after a kill (each round is six SIGKILLs)."""
    tally = Tally(f"SIGKILL: {trials} rounds x (revise stream, import, keyed writer x2 modes then change every "
                  "pre-crash entry, reindex --embedder, damaged WAL)")
    started = time.perf_counter()
    for trial in range(trials):
        # stream_trial reads back every acknowledged revision itself; a missing one is reported as its problem
        verified, problem = crash.stream_trial(workdir / f"stream-{trial}.duckdb", trial)
        tally.operations += 1
        tally.acknowledged += verified
        tally.found += verified
        tally.checks += 1
        if problem:
            tally.checks_failed.append(f"stream {trial}: {problem}")
        midway, problem = crash.import_trial(workdir / f"import-{trial}.duckdb", trial, lines=1500)
        tally.operations += 1
        tally.checks += 1
        if problem:
            tally.checks_failed.append(f"import {trial}: {problem}")
        tally.merge(writable_trial(workdir / f"writable-{trial}.duckdb", trial))
        tally.merge(reindex_trial(workdir / f"reindex-{trial}.duckdb", trial))
        wal = damaged_wal_trial(workdir / f"wal-{trial}.duckdb", trial)
        tally.merge(wal)
        tally.notes += wal.notes
    tally.seconds = time.perf_counter() - started
    return tally


# --- a lost answer -------------------------------------------------------------------------------------------------


def retry_scenario(workdir: Path, rounds: int) -> Tally:
    """Every write whose answer a proxy drops after the owner's COMMIT, sent again: applied once, first outcome."""
    from pcmem_bench import retry_trial

    started = time.perf_counter()
    tally = retry_trial.run(workdir, rounds)
    tally.seconds = time.perf_counter() - started
    return tally


# --- hostile input --------------------------------------------------------------------------------------------------


def hostile_scenario(workdir: Path, cases: int, cli_main: Any, seed: int = 0) -> Tally:
    """Hypothesis-generated text, metadata, JSONL and CLI arguments: each is accepted or refused with a typed
    error; none may raise anything else or print a traceback."""
    from pcmem_bench import hostile

    started = time.perf_counter()
    tally = hostile.run(workdir, cases, cli_main, seed)
    tally.seconds = time.perf_counter() - started
    return tally


# --- throughput -----------------------------------------------------------------------------------------------------


def scaling(path: Path, *, seconds: float = 2.0, rounds: int = 3, threads: int = 4) -> dict[str, Any]:
    """Throughput of mixed search/remember (3 searches : 1 remember) on one runtime with 1 and with ``threads``
    threads, in alternating rounds measured in the same run (:mod:`pcmem_bench.threads`)."""
    return thread_bench.scaling(path, seconds=seconds, rounds=rounds, threads=threads)


# --- the campaign ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    threads: int = 8
    ops: int = 200
    async_tasks: int = 40
    async_ops: int = 10
    process_ops: int = 40
    kill_rounds: int = 5  # x6 kills each = 30 SIGKILL trials
    retry_rounds: int = 3  # x19 writes whose answer a proxy drops (pcmem_bench.retry_trial)
    file_rounds: int = 3  # three names, foreign and cut logs, forged cursors
    creation_rounds: int = 3  # new stores per umask created while another user polls the folder (root only)
    hostile_cases: int = 10_000
    scaling_seconds: float = 2.0  # per run; rounds of (1 thread, 4 threads), the median pair's ratio
    scaling_rounds: int = 3


QUICK = Plan(threads=8, ops=15, async_tasks=40, async_ops=2, process_ops=15, kill_rounds=1, retry_rounds=1,
             file_rounds=1, creation_rounds=1, hostile_cases=300, scaling_seconds=2.0, scaling_rounds=1)


def campaign(workdir: Path, plan: Plan, cli_main: Any, progress: Callable[[str], None] = lambda _: None
             ) -> dict[str, Any]:
    """Run every scenario of ``plan``; ``cli_main`` is the click group the hostile-input cases drive."""
    scenarios: list[Tally] = []

    def step(tally_of: Callable[[], Tally]) -> None:
        tally = tally_of()
        scenarios.append(tally)
        progress(f"{tally.scenario}: {'ok' if tally.ok else 'FAILED'} ({tally.seconds:.0f} s)")

    step(lambda: threads_scenario(workdir / "threads.duckdb", threads=plan.threads, ops=plan.ops))
    step(lambda: threads_scenario(workdir / "two-runtimes.duckdb", threads=plan.threads, ops=plan.ops // 2,
                                  runtimes=2))
    step(lambda: async_scenario(workdir / "async.duckdb", tasks=plan.async_tasks, ops=plan.async_ops))
    step(lambda: processes_scenario(workdir / "processes.duckdb", ops=plan.process_ops))
    step(lambda: kill_scenario(workdir, plan.kill_rounds))
    step(lambda: retry_scenario(workdir, plan.retry_rounds))
    step(lambda: file_chaos.run(workdir, plan.file_rounds))
    step(lambda: creation_race.trial(plan.creation_rounds))
    step(lambda: hostile_scenario(workdir, plan.hostile_cases, cli_main))
    figure = scaling(workdir / "scaling.duckdb", seconds=plan.scaling_seconds, rounds=plan.scaling_rounds)
    progress(f"4 threads vs 1: {figure['ratio']}x")
    return {"scenarios": [tally.as_dict() for tally in scenarios], "scaling": figure,
            "ok": all(tally.ok for tally in scenarios)}
