"""Writes at scale (issue #30): ``remember`` against a durable SQLite FTS5 insert in the same run, and an owner
process's peak memory and write latency in a store of 1,000,000 entries over 1,000 scopes.

Run it as ``python -m pcmem_bench.writes`` (``--help``). Both measurements print JSON:

- ``ratio``: stores of each ``--sizes`` entries (hash vectors: the model is not what is measured, see
  ``--embedder`` for a real one) and a file-backed FTS5 table of the same analysed texts (WAL, synchronous=FULL:
  the durable insert ``pcmem bench perf`` compares with), written in interleaved rounds so that a machine whose
  load changes during the run slows both sides alike; the ratio is of the medians. A third side is DuckDB's own
  floor on the same file system: a file opened as pcmem opens a store, one ``INSERT`` of one row and its
  ``COMMIT`` per transaction (one fsync of the log, as a remember has) — what no DuckDB write can go below.
- ``scale``: builds the store in bulk (one remember of ``entries / scopes`` entries per scope), then a fresh process
  opens it — so it is the store's owner — and works on ``--hot`` scopes (search in every mode, remember), and
  reports its peak RSS and remember p50; the same probe runs on a store of one 1,000-entry scope for the 1k figure.

  Two peaks: while serving, and with the close. Closing checkpoints the log into the file, and a DuckDB checkpoint
  rewrites in full every column that changed of a table's last row group (up to 122,880 rows): for the vectors,
  ~1.5 KB a row. So the close peak follows how full the tables' last row groups are, not the store's size: 490 MB
  at 100,000 entries (100,000 of 122,880 rows to rewrite), 225 MB at 130,000 (7,120), while serving both stay near
  220 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pcmem
from pcmem.analysis import ANALYZERS
from pcmem.embedding.port import Embedder
from pcmem.types.memory import NewEntry, RememberRequest
from pcmem.types.search import SearchMemoryRequest
from pcmem_bench.perf import PrecomputedEmbedder, sentences

_BULK = 2000  # entries per remember while loading a store


def _load(path: Path, texts: list[str], embedder: Embedder | None) -> None:
    """``texts`` into scope ``s0``; without an embedder the store has no vector space yet (a real embedder opened
    on it later adopts its own, without embedding the loaded texts: only the writes measured are embedded)."""
    with pcmem.open(path, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s0")
        for start in range(0, len(texts), _BULK):
            memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in texts[start:start + _BULK])))


def _fts5_table(path: Path, texts: list[str]) -> sqlite3.Connection:
    analyzer = ANALYZERS["v2"]
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, scope UNINDEXED)")
    db.execute("BEGIN")
    db.executemany("INSERT INTO docs(body, scope) VALUES (?, 's0')", [(" ".join(analyzer.analyze(t)),) for t in texts])
    db.execute("COMMIT")
    return db


def _duckdb_floor(path: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    """The floor side of ``ratio``: (one durable write, close). The file is opened with pcmem's own settings (one
    DuckDB thread, the store format), so the only difference left to a remember is what a remember runs."""
    from pcmem.store.duckdb import connection

    db = connection.connect(path)
    db.execute("CREATE TABLE notes (step BIGINT, body VARCHAR)")
    db.execute("CHECKPOINT")
    step = iter(range(10**9))

    def write() -> None:
        db.execute("BEGIN TRANSACTION")
        db.execute(f"INSERT INTO notes VALUES ({next(step)}, 'a fresh note written at this step')")
        db.execute("COMMIT")

    return write, db.close


def remember_parts(size: int, workdir: Path, samples: int = 80) -> dict:
    """Where a remember of one entry goes in a store of ``size`` entries (hash vectors): :mod:`.write_parts`. On a
    store of its own, after the ratio's, so the timing never touches the ratio's figures."""
    from pcmem_bench.write_parts import breakdown, timing_statements

    store = workdir / f"parts-{size}.duckdb"
    embedder = PrecomputedEmbedder()
    _load(store, sentences(size), embedder)
    step = iter(range(10**9))
    with timing_statements() as parts, pcmem.open(store, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s0")
        memory.remember("warm up")
        result = breakdown(lambda: memory.remember(f"A fresh note written at step {next(step)}."), parts, samples)
    store.unlink(missing_ok=True)
    return {"size": size, **result, "load_average": round(os.getloadavg()[0], 1)}


def _ms(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return (time.perf_counter() - started) * 1000


def _wall_and_cpu_ms(function: Callable[[], object]) -> tuple[float, float]:
    """Elapsed and CPU milliseconds of one call: on a shared machine the CPU time (this process's, DuckDB runs on the
    calling thread) moves far less with the load than the elapsed time, which also waits for fsync and the scheduler."""
    started, cpu = time.perf_counter(), time.process_time()
    function()
    return (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000


def remember_vs_fts5(size: int, workdir: Path, *, rounds: int = 8, per_round: int = 10,
                     embedder_name: str | None = None) -> dict:
    """``remember`` of one entry vs one durable FTS5 insert and DuckDB's floor, ``rounds`` interleaved rounds of
    ``per_round`` each."""
    texts = sentences(size)
    store, reference = workdir / f"ratio-{size}.duckdb", workdir / f"ratio-{size}.sqlite"
    floor_path = workdir / f"floor-{size}.duckdb"
    embedder: Embedder = PrecomputedEmbedder()
    if embedder_name is not None:
        from pcmem.embedding.presets import resolve

        embedder = resolve(embedder_name)
    _load(store, texts, None if embedder_name else embedder)
    fts5 = _fts5_table(reference, texts)
    floor_write, floor_close = _duckdb_floor(floor_path)
    analyzer = ANALYZERS["v2"]
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    floor: list[tuple[float, float]] = []
    step = iter(range(10**9))

    def insert() -> None:
        fts5.execute("BEGIN")
        fts5.execute("INSERT INTO docs(body, scope) VALUES (?, 's0')",
                     (" ".join(analyzer.analyze(f"A fresh note written at step {next(step)}.")),))
        fts5.execute("COMMIT")

    with pcmem.open(store, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s0")
        memory.remember("warm up")
        for _ in range(rounds):
            ours += [_wall_and_cpu_ms(lambda: memory.remember(f"A fresh note written at step {next(step)}."))
                     for _ in range(per_round)]
            theirs += [_wall_and_cpu_ms(insert) for _ in range(per_round)]
            floor += [_wall_and_cpu_ms(floor_write) for _ in range(per_round)]
    fts5.close()
    floor_close()
    for path in (store, reference, floor_path, floor_path.with_name(floor_path.name + ".wal")):
        path.unlink(missing_ok=True)
    p50, reference_p50, floor_p50 = (statistics.median(wall for wall, _ in side) for side in (ours, theirs, floor))
    cpu, reference_cpu, floor_cpu = (statistics.median(cpu for _, cpu in side) for side in (ours, theirs, floor))
    return {"size": size, "embedder": embedder_name or "hash", "remember_ms_p50": round(p50, 2),
            "fts5_insert_ms_p50": round(reference_p50, 2), "ratio": round(p50 / reference_p50, 2),
            "remember_cpu_ms_p50": round(cpu, 2), "fts5_insert_cpu_ms_p50": round(reference_cpu, 2),
            "cpu_ratio": round(cpu / reference_cpu, 2),
            "duckdb_floor_ms_p50": round(floor_p50, 2), "duckdb_floor_cpu_ms_p50": round(floor_cpu, 2),
            "ratio_vs_duckdb_floor": round(p50 / floor_p50, 2), "cpu_ratio_vs_duckdb_floor": round(cpu / floor_cpu, 2),
            "samples": len(ours),
            "load_average": round(os.getloadavg()[0], 1)}


def build_spread(path: Path, entries: int, scopes: int) -> dict:
    """A store of ``entries`` hash-embedded entries spread evenly over ``scopes`` scopes, in bulk."""
    per_scope = entries // scopes
    started = time.perf_counter()
    with pcmem.open(path, embedder=PrecomputedEmbedder()) as runtime:
        for scope in range(scopes):
            texts = sentences(per_scope, seed=scope)
            for start in range(0, per_scope, _BULK):
                runtime.memory.for_scope(f"s{scope}").remember(
                    RememberRequest(entries=tuple(NewEntry(text=t) for t in texts[start:start + _BULK])))
    return {"entries": per_scope * scopes, "scopes": scopes, "build_s": round(time.perf_counter() - started, 1),
            "file_mb": round(path.stat().st_size / 2**20, 1)}


def owner_probe(path: Path, hot: int, rounds: int) -> dict:
    """In this (fresh) process: open the store — this process owns it — and work on ``hot`` scopes: each round one
    search in every mode and one remember per scope. Returns remember p50 and this process's peak RSS while serving
    and with the close (its checkpoint: see the module's notes)."""
    queries = [t.split(" (note")[0] for t in sentences(hot * rounds, seed=99)]
    writes: list[float] = []
    with pcmem.open(path, embedder=PrecomputedEmbedder()) as runtime:
        opened_mb = _peak_rss_mb()
        for round_ in range(rounds):
            for scope in range(hot):
                memory = runtime.memory.for_scope(f"s{scope}")
                for mode in ("fts", "vector", "hybrid"):
                    memory.search(SearchMemoryRequest(query=queries[round_ * hot + scope], mode=mode))
                writes.append(_ms(lambda: memory.remember(f"Round {round_} note for scope {scope}.")))
        serving_mb = _peak_rss_mb()
    return {"remember_ms_p50": round(statistics.median(writes), 2), "remembers": len(writes),
            "rss_after_open_mb": round(opened_mb, 1),
            "peak_rss_serving_mb": round(serving_mb, 1),
            "peak_rss_mb": round(_peak_rss_mb(), 1)}  # with the checkpoint closing runs (see the module's notes)


def _peak_rss_mb() -> float:
    """This process's peak resident set: ``VmHWM`` where Linux has it. Not ``ru_maxrss``, which Linux carries over
    an ``exec`` from the process that forked it (the probe's would be the store builder's)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _probe_in_new_process(path: Path, hot: int, rounds: int) -> dict:
    done = subprocess.run([sys.executable, "-m", "pcmem_bench.writes", "probe", str(path), "--hot", str(hot),
                           "--rounds", str(rounds)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def scale(workdir: Path, entries: int = 1_000_000, scopes: int = 1000, hot: int = 10, rounds: int = 10) -> dict:
    """Build the spread store, probe it and a one-scope 1,000-entry store, each from a fresh owner process."""
    big, small = workdir / "scale.duckdb", workdir / "scale-1k.duckdb"
    built = build_spread(big, entries, scopes)
    _load(small, sentences(1000, seed=0), PrecomputedEmbedder())
    probe_big = _probe_in_new_process(big, hot, rounds)
    probe_small = _probe_in_new_process(small, 1, rounds * hot)
    return {**built, "hot_scopes": hot, "owner": probe_big, "owner_1k": probe_small,
            "remember_p50_ratio_vs_1k": round(probe_big["remember_ms_p50"] / probe_small["remember_ms_p50"], 2),
            "load_average": round(os.getloadavg()[0], 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pcmem_bench.writes", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ratio = commands.add_parser("ratio", help="remember vs a durable SQLite FTS5 insert, same run")
    ratio.add_argument("--sizes", default="1000,10000")
    ratio.add_argument("--embedder", default=None, help="a preset (e.g. minilm-l6-int8) instead of hash vectors")
    ratio.add_argument("--rounds", type=int, default=8)
    ratio.add_argument("--breakdown", action="store_true",
                       help="then where a remember goes: Python, each statement, COMMIT (a separate run per size)")
    big = commands.add_parser("scale", help="owner peak RSS and remember p50 at ENTRIES over SCOPES, HOT scopes")
    big.add_argument("--entries", type=int, default=1_000_000)
    big.add_argument("--scopes", type=int, default=1000)
    big.add_argument("--hot", type=int, default=10)
    big.add_argument("--rounds", type=int, default=10)
    big.add_argument("--workdir", type=Path, default=None, help="where the stores are built (deleted afterwards)")
    probe = commands.add_parser("probe", help=argparse.SUPPRESS)
    probe.add_argument("path", type=Path)
    probe.add_argument("--hot", type=int, default=10)
    probe.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    if args.command == "probe":
        print(json.dumps(owner_probe(args.path, args.hot, args.rounds)))
        return
    workdir = Path(tempfile.mkdtemp(prefix="pcmem-writes-", dir=getattr(args, "workdir", None)))
    try:
        if args.command == "ratio":
            for size in (int(s) for s in args.sizes.split(",") if s.strip()):
                print(json.dumps(remember_vs_fts5(size, workdir, rounds=args.rounds, embedder_name=args.embedder)),
                      flush=True)
                if args.breakdown:
                    print(json.dumps(remember_parts(size, workdir)), flush=True)
        else:
            print(json.dumps(scale(workdir, args.entries, args.scopes, args.hot, args.rounds)), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
