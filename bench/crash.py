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
import time
from dataclasses import dataclass, field
from pathlib import Path

import pcmem
from pcmem.store.duckdb import DuckDBBackend
from pcmem_bench import programs

STREAM_CHANGE_COUNTS = (1, 20)

#: How long after the import's transaction began the kill may come (the 3000-line transaction takes longer).
IMPORT_KILL_WINDOW = 0.02


#: How each pre-crash entry is changed after the kill, in turn (one write each, by entry).
AFTER_CRASH_WRITES = ("revise", "retire", "upsert", "forget")


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
    process = subprocess.Popen(programs.command("stream_writer", str(path)), stdout=subprocess.PIPE, text=True)
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
    with pcmem.open(path, embedder=None) as runtime:
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


def writable_trial(path: Path, seed: int, *, cli: str | None = None) -> tuple[int, int, list[str]]:
    """Kill a keyed writer at a random point, open and close the store untouched (as
    a CLI read does), then change every pre-crash entry — revise, retire, upsert and forget in turn, each with its
    entry's own version — through the library, and the last few through the CLI at ``cli`` when given.

    Returns (entries written before the kill, entries changed after it, problems): after an unclean exit every
    acknowledged entry must still be there and writable (issue #26: DuckDB lost replayed index rows)."""
    rng = random.Random(seed)
    command = programs.command("keyed_writer", str(path))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    acknowledged: list[str] = []
    deadline, kill_after = time.monotonic() + 60, rng.randint(1, 6)
    while len(acknowledged) < 3 * kill_after and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        acknowledged += line.split()
    time.sleep(rng.random() * 0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    pcmem.open(path, embedder=None).close()
    problems: list[str] = []
    changed = 0
    for turn, entry_id in enumerate(acknowledged):
        how = AFTER_CRASH_WRITES[turn % len(AFTER_CRASH_WRITES)]
        through_cli = cli is not None and turn >= len(acknowledged) - len(AFTER_CRASH_WRITES)  # last: the CLI
        # gives a store without vectors the default embedder, which a library runtime without one may not write
        problem = _change_cli(cli, path, entry_id, how) if through_cli and cli else _change(path, entry_id, how)
        if problem:
            problems.append(f"{how} of pre-crash entry {entry_id}{' (CLI)' if through_cli else ''}: {problem}")
        else:
            changed += 1
    with pcmem.open(path, embedder=None) as runtime:
        report = _file_backend(runtime).check()
    if not report.ok:
        problems.append("check after the writes: " + "; ".join(report.problems))
    return len(acknowledged), changed, problems


def _change(path: Path, entry_id: str, how: str) -> str | None:
    from pcmem import RetireRequest, ReviseRequest

    try:
        with pcmem.open(path, embedder=None) as runtime:
            memory = runtime.memory.for_scope("crash")
            version = memory.get_entry(entry_id).entry.version
            if how == "revise":
                memory.revise(ReviseRequest(entry_id=entry_id, text="changed after the crash", expected_version=version))
            elif how == "retire":
                memory.retire(RetireRequest(entry_id=entry_id, expected_version=version))
            elif how == "upsert":
                memory.remember(pcmem.RememberRequest(upsert=True, entries=(
                    pcmem.NewEntry(entry_id=entry_id, text="upserted after the crash"),)))
            else:
                memory.forget(entry_id)
    except Exception as error:  # noqa: BLE001 - any failure is the finding
        return f"{type(error).__name__}: {error}"
    return None


def _change_cli(cli: str, path: Path, entry_id: str, how: str) -> str | None:
    args = {"revise": ["revise", "--scope", "crash", entry_id, "changed after the crash"],
            "retire": ["retire", "--scope", "crash", entry_id],
            "upsert": ["remember", "--scope", "crash", "--id", entry_id, "--upsert", "upserted after the crash"],
            "forget": ["forget", "--scope", "crash", "--yes", entry_id]}[how]
    done = subprocess.run([cli, "--db", str(path), *args], capture_output=True, text=True,
                          timeout=120)
    return None if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[:200]}"


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
    command = programs.command("import_writer", str(path), str(source))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    began = process.stdout.readline().strip() == "in-transaction"
    if began:
        time.sleep(rng.uniform(0.0, IMPORT_KILL_WINDOW))
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    committed = "committed" in process.stdout.read().split()
    inside = began and not committed
    with pcmem.open(path, embedder=None) as runtime:
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
