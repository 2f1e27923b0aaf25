"""Two processes, one store: a long-lived owner process and a second writer, each doing a few hundred mixed
operations. Nothing is lost, nobody sees "database is locked", every result cites a valid revision."""

from __future__ import annotations

import json
import subprocess
import sys

import pcmem

OPERATIONS = 150
WORKER = r"""
import json, sys, pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest, RevisionConflictError
from pcmem import SearchMemoryRequest
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = []
with pcmem.open(path, embedder=None, lock_timeout=30) as runtime:
    memory = runtime.memory.for_scope("shared")
    mine = []
    for i in range(count):
        kind = i % 3
        if kind == 0 or not mine:
            result = memory.remember(RememberRequest(entries=(NewEntry(entry_id=f"{name}-{i}", text=f"{name} note {i} kiwi"),)))
            mine.append(f"{name}-{i}")
            log.append(["write", result.memory.revision, result.citations[0].model_dump()])
        elif kind == 1:
            page = memory.search(SearchMemoryRequest(query="kiwi", mode="fts", limit=5))
            log.append(["search", page.memory.revision, [h.citation.model_dump() for h in page.hits]])
        else:
            while True:
                head = memory.head().revision
                try:
                    result = memory.revise(ReviseRequest(entry_id=mine[-1], text=f"{name} revised {i} kiwi", expected_revision=head))
                    log.append(["write", result.memory.revision, result.citations[0].model_dump()])
                    break
                except RevisionConflictError:
                    continue  # the other process wrote in between: re-read the head and try again
print(json.dumps(log))
"""


def test_two_processes_share_one_store(tmp_path):
    path = tmp_path / "shared.duckdb"
    pcmem.open(path, embedder=None).close()
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), name, str(OPERATIONS)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    logs = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        assert "locked" not in err.lower()
        logs.append(json.loads(out))
    with pcmem.open(path, embedder=None) as runtime:
        assert runtime.backend.check().ok
        memory = runtime.memory.for_scope("shared")
        writes = [entry for log in logs for entry in log if entry[0] == "write"]
        assert memory.head().revision == len(writes)  # every write made exactly one revision, none lost
        assert sorted(rev for _, rev, _ in writes) == list(range(1, len(writes) + 1))
        for _, _, citation in writes:
            assert memory.get(pcmem.Citation(**citation)).entry.entry_version_id == citation["entry_version_id"]
        for log in logs:
            for kind, revision, hits in log:
                if kind == "search":
                    for citation in hits:
                        assert citation["revision"] == revision  # one revision per page
                        memory.get(pcmem.Citation(**citation))  # and it is a valid citation


HOLDER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None):
    print("holding", flush=True)
    sys.stdin.readline()
"""


def _scope_of_six(path):
    from pcmem import NewEntry, RememberRequest, RetireRequest

    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=f"note {i}") for i in range(6))))
        for entry_id in ("e4", "e5"):
            memory.retire(RetireRequest(entry_id=entry_id, expected_version=1))


def _states(path) -> dict:
    with pcmem.open(path, embedder=None) as runtime:
        entries = runtime.memory.for_scope("s").list(pcmem.ListRequest(state="all")).entries
        return {e.entry.entry_id: (e.state, e.entry.version) for e in entries}


def test_cli_writers_of_different_entries_of_one_scope_do_not_conflict(tmp_path):
    """revise/retire/reactivate without an expectation compare the entry they read, not the scope's head: processes
    changing different entries of one scope at the same time all succeed (issue 26: 12 of 18 exited 3)."""
    import os
    import time

    path = tmp_path / "m.duckdb"
    _scope_of_six(path)
    commands = [["revise", "-s", "s", "e0", "changed 0"], ["retire", "-s", "s", "e2"], ["reactivate", "-s", "s", "e4"]]
    # A process holds the file until every command has started, so they all read and write at about the same time.
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        env = {**os.environ, "PCMEM_LOCK_TIMEOUT": "60"}
        writers = [subprocess.Popen([sys.executable, "-m", "pcmem", "--db", str(path), *command], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for command in commands]
        time.sleep(1.0)
    finally:
        holder.communicate("\n", timeout=60)
    outcomes = [(writer.wait(timeout=120), writer.stderr.read().strip()) for writer in writers]
    assert outcomes == [(0, "")] * len(commands)
    assert _states(path) == {"e0": ("active", 2), "e1": ("active", 1), "e2": ("retired", 1), "e3": ("active", 1),
                             "e4": ("active", 1), "e5": ("retired", 1)}


def test_a_cli_write_lands_after_another_entry_changed_since_it_read(tmp_path, monkeypatch):
    """The same, made certain: another entry of the scope is revised between the command's read and its write."""
    from click.testing import CliRunner

    from pcmem import ReviseRequest
    from pcmem.cli import main
    from pcmem.memory.scoped import SyncScopedMemory

    path = tmp_path / "m.duckdb"
    _scope_of_six(path)
    originals = {name: getattr(SyncScopedMemory, name) for name in ("revise", "retire", "reactivate")}

    def interleaving(name):
        def write(self, request):
            originals["revise"](self, ReviseRequest(entry_id="e1", text=f"meanwhile {name}",
                                                    expected_revision=self.head().revision))
            return originals[name](self, request)
        return write

    for name in originals:
        monkeypatch.setattr(SyncScopedMemory, name, interleaving(name))
    for command in (["revise", "-s", "s", "e0", "changed 0"], ["retire", "-s", "s", "e2"],
                    ["reactivate", "-s", "s", "e4"]):
        result = CliRunner().invoke(main, ["--db", str(path), *command])
        assert result.exit_code == 0, result.output
    monkeypatch.undo()
    states = _states(path)
    assert states["e0"] == ("active", 2) and states["e2"] == ("retired", 1) and states["e4"] == ("active", 1)
    assert states["e1"] == ("active", 4)
