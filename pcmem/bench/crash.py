"""``pcmem bench crash``: SIGKILL a writer at random points and verify the store after every kill.

Two workloads: a stream of remember/revise calls (every call that returned must be present afterwards, and no
half-written revision may be visible), and ``pcmem import`` of a JSONL file (all of the file or none of it).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pcmem
from pcmem.store.duckdb import DuckDBBackend

STREAM_WRITER = r"""
import sys, pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest
with pcmem.open_sync(sys.argv[1], embedder=None) as runtime:
    memory = runtime.memory.for_scope("crash")
    i = 0
    while True:
        head = memory.head()
        if i % 3 == 2 and head is not None:
            entry = memory.list().entries[0].entry.entry_id
            result = memory.revise(ReviseRequest(entry_id=entry, text=f"revision text {i}",
                                                 expected_revision=head.revision))
        else:
            entries = tuple(NewEntry(entry_id=f"w{i}-{j}", text=f"write {i} part {j} " + "x" * 200) for j in range(20))
            result = memory.remember(RememberRequest(entries=entries))
        print(result.memory.revision, flush=True)   # acknowledged: the call returned
        i += 1
"""
STREAM_CHANGE_COUNTS = (1, 20)

# `pcmem import` as the CLI runs it, with embedding off (so the write transaction starts at once, instead of after
# minutes of embedding) and the backend's write announcing when its transaction has begun and when it committed.
IMPORT_WRITER = r"""
import sys
from contextlib import contextmanager

import pcmem.cli as cli
from pcmem.store.duckdb import DuckDBBackend

open_sync, write = cli.open_sync, DuckDBBackend.write
cli.open_sync = lambda path, **options: open_sync(path, **{**options, "embedder": None})


@contextmanager
def announced(self, scope):
    with write(self, scope) as tx:
        print("in-transaction", flush=True)
        yield tx
    print("committed", flush=True)


DuckDBBackend.write = announced
cli.main(["--db", sys.argv[1], "import", "--scope", "imported", sys.argv[2]])
"""
#: How long after the import's transaction began the kill may come (the 3000-line transaction takes longer).
IMPORT_KILL_WINDOW = 0.02


@dataclass
class CrashReport:
    trials: int = 0
    acknowledged_writes_verified: int = 0
    imports_killed_midway: int = 0
    failures: list[str] = field(default_factory=list)


def _file_backend(runtime: pcmem.SyncRuntime) -> DuckDBBackend:
    """The trials write DuckDB files: check() is the file backend's own maintenance call."""
    assert isinstance(runtime.backend, DuckDBBackend)
    return runtime.backend


def stream_trial(path: Path, seed: int) -> tuple[int, str | None]:
    """Kill a remember/revise stream after a random number of acknowledged writes; return (verified, problem)."""
    rng = random.Random(seed)
    process = subprocess.Popen([sys.executable, "-c", STREAM_WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    acknowledged: list[int] = []
    deadline, kill_after = time.monotonic() + 60, rng.randint(3, 12)
    while len(acknowledged) < kill_after and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        acknowledged.append(int(line))
    time.sleep(rng.random() * 0.05)  # land somewhere inside the next write
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return verify_stream(path, acknowledged)


def verify_stream(path: Path, acknowledged: list[int]) -> tuple[int, str | None]:
    if not acknowledged:
        return 0, "the writer never acknowledged a write"
    with pcmem.open_sync(path, embedder=None) as runtime:
        report = _file_backend(runtime).check()
        if not report.ok:
            return 0, "; ".join(report.problems)
        memory = runtime.memory.for_scope("crash")
        head_ref = memory.head()
        head = 0 if head_ref is None else head_ref.revision
        if head < acknowledged[-1]:
            return 0, f"acknowledged revision {acknowledged[-1]} is missing (head {head})"
        revisions = memory.revisions()
        if [r.revision for r in revisions] != list(range(1, head + 1)):
            return 0, "revision numbers have gaps"
        if any(r.change_count not in STREAM_CHANGE_COUNTS for r in revisions):
            return 0, "a half-written revision is visible"
    return len(acknowledged), None


def import_trial(path: Path, seed: int, lines: int = 3000) -> tuple[bool, str | None]:
    """Kill ``pcmem import`` inside its write transaction: afterwards the scope holds none of the file.

    The importer announces on stdout when its write transaction has begun and when it has committed (embedding is
    off, so the transaction comes at once); the kill follows the first announcement after a random delay of up to
    ``IMPORT_KILL_WINDOW`` seconds. Returns (the kill landed inside the transaction, problem) — a kill that landed
    before or after it proves nothing about atomicity, so it is reported as a problem too.
    """
    rng = random.Random(seed)
    source = path.with_suffix(".jsonl")
    source.write_text("".join(json.dumps({"text": f"imported line {i} " + "y" * 100}) + "\n" for i in range(lines)))
    command = [sys.executable, "-c", IMPORT_WRITER, str(path), str(source)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    began = process.stdout.readline().strip() == "in-transaction"
    if began:
        time.sleep(rng.uniform(0.0, IMPORT_KILL_WINDOW))
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    committed = "committed" in process.stdout.read().split()
    inside = began and not committed
    with pcmem.open_sync(path, embedder=None) as runtime:
        report = _file_backend(runtime).check()
        if not report.ok:
            return inside, "; ".join(report.problems)
        head = runtime.memory.for_scope("imported").head()
        count = 0 if head is None else len(runtime.memory.for_scope("imported").list().entries)
    if not inside:
        return inside, "the kill did not land inside the import's write transaction"
    if count != 0:
        return inside, f"an import killed inside its transaction left {count} of {lines} entries"
    return inside, None


def run(trials: int, workdir: Path) -> CrashReport:
    report = CrashReport()
    for trial in range(trials):
        verified, problem = stream_trial(workdir / f"stream-{trial}.duckdb", trial)
        report.acknowledged_writes_verified += verified
        if problem:
            report.failures.append(f"stream trial {trial}: {problem}")
        midway, problem = import_trial(workdir / f"import-{trial}.duckdb", trial)
        report.imports_killed_midway += midway
        if problem:
            report.failures.append(f"import trial {trial}: {problem}")
        report.trials += 1
    return report
