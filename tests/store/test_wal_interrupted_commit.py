"""A process killed inside a COMMIT (issue #30's group commit made commits of several writes common): DuckDB writes a
commit's log in 4 KiB pieces and syncs after the last, so a SIGKILL between two pieces leaves the records of a
transaction without its closing FLUSH. That write was never acknowledged; every acknowledged one is before it. The
store refused to open — for every process, the CLI and the TUI — until someone ran ``pcmem check --recover-wal``.

The kill is placed exactly: strace delivers SIGKILL on the writer's third write() to the store's log (the first is the
acknowledged note's whole commit, the second the first piece of a 20-entry commit)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pcmem
from pcmem.store.duckdb import files
from pcmem.store.duckdb.wal import damaged_wal_copies, scan_wal

ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import sys, pcmem
    from pcmem import NewEntry, RememberRequest
    memory = pcmem.open(sys.argv[1], embedder=None).memory.for_scope("s")
    memory.remember("the acknowledged note")
    print("acknowledged", flush=True)
    memory.remember(RememberRequest(entries=tuple(NewEntry(text=f"part {j} of a big write " + "x" * 300)
                                                  for j in range(20))))
    print("the big write was acknowledged", flush=True)
""")


def _killed_inside_a_commit(path: Path) -> bytes:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace places the kill inside the commit; it is not installed")
    pcmem.open(path, embedder=None).close()
    done = subprocess.run(
        [strace, "-f", "-qq", "-o", "/dev/null", "-P", str(files.wal_path(path)), "-e", "trace=write",
         "-e", "inject=write:error=EIO:signal=KILL:when=3", sys.executable, "-c", WRITER, str(path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    if "Operation not permitted" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    assert done.stdout.splitlines() == ["acknowledged"], (done.stdout, done.stderr)
    data = files.wal_path(path).read_bytes()
    scan = scan_wal(data)
    assert scan.transactions == 1 and scan.problem is not None  # a commit cut between two of its pieces
    return data


def test_the_store_opens_after_a_kill_inside_a_commit(tmp_path):
    path = tmp_path / "m.duckdb"
    log = _killed_inside_a_commit(path)
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        assert [e.entry.text for e in memory.list().entries] == ["the acknowledged note"]
        assert memory.head().revision == 1
        memory.remember("written after the crash")
        assert memory.head().revision == 2
        assert runtime.backend.check().ok
    assert [copy.read_bytes() for copy in damaged_wal_copies(path)] == [log]


def test_the_cli_reads_the_store_after_a_kill_inside_a_commit_and_says_what_it_set_aside(tmp_path):
    path = tmp_path / "m.duckdb"
    _killed_inside_a_commit(path)
    done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "list", "-s", "s", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "the acknowledged note" in done.stdout and "big write" not in done.stdout
    warning = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(warning) == 1 and "never committed" in warning[0] and str(damaged_wal_copies(path)[0]) in warning[0]
    assert "Traceback" not in done.stderr
