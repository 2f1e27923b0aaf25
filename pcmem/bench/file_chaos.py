"""The file's own chaos (issue #26): one store under two names, logs that are not the store's, forged cursors.

Each trial returns a :class:`~pcmem.bench.tally.Tally`: operations run, writes acknowledged and found, typed and
untyped errors, and ``check`` after the trial.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pcmem
from pcmem.bench import crash
from pcmem.bench.tally import Tally, attempt
from pcmem.errors import PcmemError, StoreWALError
from pcmem.types.memory import ListRequest, NewEntry, RememberRequest

# Writes three notes to the scope named on the command line, acknowledges, then dies without closing (its log stays).
KILLED_WRITER = r"""
import os, sys, pcmem
runtime = pcmem.open_sync(sys.argv[1], embedder=None)
memory = runtime.memory.for_scope(sys.argv[2])
for i in range(3):
    memory.remember(f"note {i} of " + sys.argv[2])
print("acknowledged", flush=True)
os.kill(os.getpid(), 9)
"""


def _check(path: Path, tally: Tally) -> None:
    tally.checks += 1
    try:
        with pcmem.open_sync(path, embedder=None) as runtime:
            report = crash._file_backend(runtime).check()
    except PcmemError as error:
        tally.checks_failed.append(f"{type(error).__name__}: {error}")
        return
    if not report.ok:
        tally.checks_failed.append("; ".join(report.problems))


def _kill_writer(path: Path, scope: str) -> None:
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path), scope], capture_output=True, text=True,
                          timeout=120)
    if done.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the killed writer did not die as planned: {done.stderr.strip()[-300:]}")


def two_names_trial(workdir: Path, seed: int, writes: int = 30) -> Tally:
    """A hard link and a symlink to one store, written alternately in one process: every acknowledged write is
    found (a store keyed by name opened two DuckDB instances and lost half of them)."""
    tally = Tally("one file, three names")
    rng = random.Random(seed)
    path = workdir / f"names-{seed}.duckdb"
    pcmem.open_sync(path, embedder=None).close()
    hard, soft = workdir / f"names-{seed}-hard.duckdb", workdir / f"names-{seed}-soft.duckdb"
    os.link(path, hard)
    soft.symlink_to(path)
    runtimes = [pcmem.open_sync(name, embedder=None) for name in (path, hard, soft)]
    try:
        for i in range(writes):
            memory = rng.choice(runtimes).memory.for_scope("names")
            if attempt(tally, lambda: memory.remember(f"write {i} through one of three names")) is not None:
                tally.acknowledged += 1
    finally:
        for runtime in runtimes:
            runtime.close()
    with pcmem.open_sync(hard, embedder=None) as runtime:
        tally.found += len(runtime.memory.for_scope("names").list().entries)
    _check(path, tally)
    return tally


def foreign_log_trial(workdir: Path, seed: int) -> Tally:
    """Another store's log, and this store's log cut short behind a symlink: both refused with StoreWALError naming
    the log, the store untouched (a foreign log was replayed into the store; a cut log behind a symlink was replayed
    in part, silently)."""
    tally = Tally("logs that are not the store's")
    mine, theirs = workdir / f"mine-{seed}.duckdb", workdir / f"theirs-{seed}.duckdb"
    for path, scope in ((mine, "mine"), (theirs, "theirs")):
        with pcmem.open_sync(path, embedder=None) as runtime:
            runtime.memory.for_scope(scope).remember(f"{scope} first note")
    tally.acknowledged += 1  # this store's first note must survive everything below
    _kill_writer(theirs, "theirs")
    shutil.copy(theirs.with_name(theirs.name + ".wal"), mine.with_name(mine.name + ".wal"))
    _expect_refusal(mine, tally)
    mine.with_name(mine.name + ".wal").rename(mine.with_name(mine.name + ".wal.foreign"))
    link = workdir / f"link-{seed}.duckdb"
    link.symlink_to(mine)
    _kill_writer(link, "mine")  # its log lies next to the target, not next to the link
    wal = mine.with_name(mine.name + ".wal")
    data = wal.read_bytes()
    wal.write_bytes(data[: len(data) - random.Random(seed).randint(1, 40)])  # damage: those writes are not counted
    _expect_refusal(link, tally)
    wal.rename(wal.with_name(wal.name + ".damaged"))  # what the refusal tells the user to do
    with pcmem.open_sync(link, embedder=None) as runtime:
        scopes = {summary.scope for summary in runtime.memory.scopes()}
        texts = {item.entry.text for item in runtime.memory.for_scope("mine").list().entries}
    tally.found += "mine first note" in texts
    if "theirs" in scopes:
        tally.untyped_errors.append("another store's scope appeared in this store")
    _check(mine, tally)
    return tally


def _expect_refusal(path: Path, tally: Tally) -> None:
    tally.operations += 1
    try:
        pcmem.open_sync(path, embedder=None).close()
        tally.untyped_errors.append(f"{path.name}: a log that is not replayable was opened without a word")
    except StoreWALError as error:
        tally.typed_errors[type(error).__name__] += 1
        if ".wal" not in str(error):
            tally.untyped_errors.append(f"the refusal does not name the log: {error}")


def forged_cursor_trial(workdir: Path, seed: int, forgeries: int = 200) -> Tally:
    """Edited paging cursors: each is refused with a typed error or continues the same scope's listing — never a
    traceback, never another scope's entries."""
    tally = Tally("forged cursors")
    rng = random.Random(seed)
    path = workdir / f"cursors-{seed}.duckdb"
    with pcmem.open_sync(path, embedder=None) as runtime:
        for scope in ("alice", "bob"):
            runtime.memory.for_scope(scope).remember(RememberRequest(entries=tuple(
                NewEntry(entry_id=f"{scope}-{i:03d}", text=f"{scope} note {i}") for i in range(40))))
            tally.acknowledged += 40
        alice = runtime.memory.for_scope("alice")
        cursor = alice.list(ListRequest(limit=5)).next_cursor
        assert cursor is not None
        for _ in range(forgeries):
            forged = _forge(cursor, rng)
            page = attempt(tally, lambda: alice.list(ListRequest(limit=5, cursor=forged)))
            if page is not None and any(not e.entry.entry_id.startswith("alice-") for e in page.entries):
                tally.untyped_errors.append(f"a forged cursor listed another scope's entries: {forged!r}")
        tally.found += sum(len(runtime.memory.for_scope(scope).list().entries) for scope in ("alice", "bob"))
    _check(path, tally)
    return tally


def _forge(cursor: str, rng: random.Random) -> str:
    chars = list(cursor)
    how = rng.randrange(4)
    if how == 0:  # flip one character
        i = rng.randrange(len(chars))
        chars[i] = rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")
    elif how == 1:  # cut it short
        chars = chars[: rng.randrange(len(chars))]
    elif how == 2:  # insert noise
        chars.insert(rng.randrange(len(chars) + 1), rng.choice("!{}\"\\\x00é"))
    else:  # swap two halves
        half = len(chars) // 2
        chars = chars[half:] + chars[:half]
    return "".join(chars)


def run(workdir: Path, trials: int) -> Tally:
    """``trials`` rounds of every trial above, merged into one tally."""
    import time

    started = time.perf_counter()
    total = Tally(f"file: {trials} rounds x (three names, foreign + cut logs behind a symlink, forged cursors)")
    for seed in range(trials):
        for trial in (two_names_trial, foreign_log_trial, forged_cursor_trial):
            part = trial(workdir, seed)
            total.merge(part)
            total.notes += part.notes
    total.seconds = time.perf_counter() - started
    return total
