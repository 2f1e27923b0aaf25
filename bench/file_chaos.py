"""The file's own chaos (issue #26): one store under three names, logs that are not the store's, forged cursors,
flipped bits in live blocks, and a server stopped by a service manager's signal while it writes.

Each trial returns a :class:`~pcmem_bench.tally.Tally`: operations run, writes acknowledged and found, typed and
untyped errors, and ``check`` after the trial.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pcmem
from pcmem.errors import PcmemError, StoreWALError
from pcmem.store.duckdb.wal import damaged_wal_copies
from pcmem.types.memory import ListRequest, NewEntry, RememberRequest
from pcmem_bench import crash, programs
from pcmem_bench.tally import Tally, attempt


def _check(path: Path, tally: Tally) -> None:
    tally.checks += 1
    try:
        with pcmem.open(path, embedder=None) as runtime:
            report = crash._file_backend(runtime).check()
    except PcmemError as error:
        tally.checks_failed.append(f"{type(error).__name__}: {error}")
        return
    if not report.ok:
        tally.checks_failed.append("; ".join(report.problems))


def _kill_writer(path: Path, scope: str) -> None:
    done = subprocess.run(programs.command("killed_writer", str(path), scope), capture_output=True, text=True,
                          timeout=120)
    if done.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the killed writer did not die as planned: {done.stderr.strip()[-300:]}")


def two_names_trial(workdir: Path, seed: int, writes: int = 30) -> Tally:
    """A hard link and a symlink to one store, written alternately in one process: every acknowledged write is
    found (a store keyed by name opened two DuckDB instances and lost half of them)."""
    tally = Tally("one file, three names")
    rng = random.Random(seed)
    path = workdir / f"names-{seed}.duckdb"
    pcmem.open(path, embedder=None).close()
    hard, soft = workdir / f"names-{seed}-hard.duckdb", workdir / f"names-{seed}-soft.duckdb"
    os.link(path, hard)
    soft.symlink_to(path)
    runtimes = [pcmem.open(name, embedder=None) for name in (path, hard, soft)]
    try:
        for i in range(writes):
            memory = rng.choice(runtimes).memory.for_scope("names")
            if attempt(tally, lambda: memory.remember(f"write {i} through one of three names")) is not None:
                tally.acknowledged += 1
    finally:
        for runtime in runtimes:
            runtime.close()
    with pcmem.open(hard, embedder=None) as runtime:
        tally.found += len(runtime.memory.for_scope("names").list().entries)
    _check(path, tally)
    return tally


def foreign_log_trial(workdir: Path, seed: int) -> Tally:
    """Another store's log: refused with StoreWALError naming the log, the store untouched (a foreign log was replayed
    into the store). This store's log cut short behind a symlink (what a kill inside a commit leaves): opened with
    its complete transactions, the whole log kept next to the target, not next to the link (a cut log behind a
    symlink was once replayed in part, silently)."""
    tally = Tally("logs that are not the store's")
    mine, theirs = workdir / f"mine-{seed}.duckdb", workdir / f"theirs-{seed}.duckdb"
    for path, scope in ((mine, "mine"), (theirs, "theirs")):
        with pcmem.open(path, embedder=None) as runtime:
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
    cut = data[: len(data) - random.Random(seed).randint(1, 40)]  # damage: those writes are not counted
    wal.write_bytes(cut)
    tally.operations += 1
    with pcmem.open(link, embedder=None) as runtime:
        scopes = {summary.scope for summary in runtime.memory.scopes()}
        texts = {item.entry.text for item in runtime.memory.for_scope("mine").list().entries}
    tally.found += "mine first note" in texts
    kept = [copy for copy in damaged_wal_copies(mine) if not copy.name.endswith(".foreign")]  # moved aside above
    if [copy.read_bytes() for copy in kept] != [cut]:
        tally.untyped_errors.append("a log cut short was opened without keeping a copy of it next to the store")
    if damaged_wal_copies(link):
        tally.untyped_errors.append("the copy of a log behind a symlink was kept next to the link")
    if "theirs" in scopes:
        tally.untyped_errors.append("another store's scope appeared in this store")
    _check(mine, tally)
    return tally


def _expect_refusal(path: Path, tally: Tally) -> None:
    tally.operations += 1
    try:
        pcmem.open(path, embedder=None).close()
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
    with pcmem.open(path, embedder=None) as runtime:
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


def flipped_bit_trial(workdir: Path, seed: int) -> Tally:
    """One flipped bit in a random block in use of a closed store: ``check`` must not say ok (it said ok while every
    write failed), and the store is never opened as if nothing happened."""
    from pcmem.store.duckdb import blocks

    tally = Tally("flipped bits in live blocks")
    rng = random.Random(seed)
    path = workdir / f"bits-{seed}.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("bits").remember(RememberRequest(entries=tuple(
            NewEntry(entry_id=f"b{i}", text=f"note {i} with a few words") for i in range(200))))
    scan = blocks.scan(path)
    in_use = sorted(set(range(scan.blocks)) - set(scan.free))
    block = rng.choice(in_use)
    offset = 3 * 4096 + block * 256 * 1024 + 8 + rng.randrange(256 * 1024 - 8)  # DuckDB 1.5's layout
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ (1 << rng.randrange(8))]))
    tally.operations += 1
    tally.checks += 1
    try:
        with pcmem.open(path, embedder=None) as runtime:
            report = crash._file_backend(runtime).check()
        if report.ok:
            tally.checks_failed.append(f"check said ok with a flipped bit in block {block}")
        else:
            tally.typed_errors["check: damaged"] += 1
    except PcmemError as error:  # a damaged block that stops the open is a typed refusal too
        tally.typed_errors[type(error).__name__] += 1
    except Exception as error:  # noqa: BLE001 - counting them is the point
        tally.untyped_errors.append(f"{type(error).__name__}: {error}")
    return tally


def stop_signal_trial(workdir: Path, seed: int) -> Tally:
    """``pcmem serve`` under six writing clients, stopped with SIGTERM or SIGHUP: it exits 0 within the grace,
    leaves no log behind, and every acknowledged write is in the store."""
    import json
    import threading

    import httpx

    tally = Tally("stop signals under load")
    number = (signal.SIGTERM, signal.SIGHUP)[seed % 2]
    path = workdir / f"served-{seed}.duckdb"
    process = subprocess.Popen([sys.executable, "-m", "pcmem", "--db", str(path), "serve", "--port", "0", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    url = json.loads(process.stdout.readline())["url"]
    acknowledged: list[str] = []

    def write(writer: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            for n in range(10_000):
                text = f"writer {writer} note {n}"
                try:
                    answer = client.post("/v1/memory/remember", json={"scope_id": "s", "kind": "fact", "text": text})
                except httpx.HTTPError:
                    return
                if answer.status_code != 200:
                    return
                acknowledged.append(text)

    writers = [threading.Thread(target=write, args=(k,)) for k in range(6)]
    for thread in writers:
        thread.start()
    while len(acknowledged) < 20 + random.Random(seed).randrange(40) and process.poll() is None:
        time.sleep(0.01)
    process.send_signal(number)
    try:
        status = process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        status = process.wait()
        tally.untyped_errors.append(f"still running 30 s after {signal.Signals(number).name}")
    for thread in writers:
        thread.join(30)
    stderr = process.stderr.read()
    tally.operations += len(acknowledged) + 1
    tally.acknowledged += len(acknowledged)
    if status != 0 or "Traceback" in stderr:
        tally.untyped_errors.append(f"{signal.Signals(number).name}: exit {status} {stderr.strip()[-200:]}")
    if path.with_name(path.name + ".wal").exists():
        tally.checks_failed.append(f"{signal.Signals(number).name} left the write-ahead log behind")
    with pcmem.open(path, embedder=None) as runtime:
        texts = {item.entry.text for item in runtime.memory.for_scope("s").list().entries}
    tally.found += len(set(acknowledged) & texts)
    _check(path, tally)
    return tally


def run(workdir: Path, trials: int) -> Tally:
    """``trials`` rounds of every trial above, merged into one tally."""
    started = time.perf_counter()
    total = Tally(f"file: {trials} rounds x (three names, foreign + cut logs behind a symlink, forged cursors, a "
                  "flipped bit in a live block, serve stopped by SIGTERM/SIGHUP under load)")
    for seed in range(trials):
        for trial in (two_names_trial, foreign_log_trial, forged_cursor_trial, flipped_bit_trial, stop_signal_trial):
            part = trial(workdir, seed)
            total.merge(part)
            total.notes += part.notes
    total.seconds = time.perf_counter() - started
    return total
