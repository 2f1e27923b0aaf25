"""Group commit of concurrent writes (issue #30, pcmem/store/duckdb/write_groups.py): writes queued on other threads
while one transaction runs commit together, each caller keeping its own result or error, compare-and-swap exact, and
every acknowledged write durable. Real threads on a real DuckDB file; the kill test SIGKILLs a real process.

Deterministic: the test leads an empty group (``held``) while the writers queue, so what forms the next group is
known; the waits below poll a condition (a deadline only keeps a broken build from hanging)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest
from pcmem.errors import InputError, RevisionConflictError, StoreError
from pcmem.store.duckdb import DuckDBBackend
from pcmem.store.duckdb.write_clock import clock_for
from pcmem_bench import programs


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[pcmem.SyncRuntime]:
    with pcmem.open(tmp_path / "groups.duckdb", embedder=None) as opened:
        yield opened


def _backend(runtime: pcmem.SyncRuntime) -> DuckDBBackend:
    assert isinstance(runtime.backend, DuckDBBackend)
    return runtime.backend


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the writers never queued"
        time.sleep(0.001)


def _grouped(runtime: pcmem.SyncRuntime, writes: list[Callable[[], Any]]) -> tuple[list[Any], int]:
    """Run ``writes`` on threads of their own, queued in this order behind a held group, then let them go; returns
    each write's result (or the exception it raised) in order, and how many write transactions committed."""
    backend = _backend(runtime)
    outcomes: list[Any] = [None] * len(writes)

    def call(index: int) -> None:
        try:
            outcomes[index] = writes[index]()
        except Exception as error:  # noqa: BLE001 - the write's own error is its outcome
            outcomes[index] = error

    commits_before = clock_for(backend.path).begun()
    threads = [threading.Thread(target=call, args=(index,)) for index in range(len(writes))]
    with backend.write_groups.held():
        for index, thread in enumerate(threads):
            thread.start()
            _wait_until(lambda index=index: backend.write_groups.queued() == index + 1)  # in this order
    for thread in threads:
        thread.join()
    return outcomes, clock_for(backend.path).begun() - commits_before


def test_writes_queued_while_one_commits_share_one_commit_each_with_its_own_revision(runtime):
    memory = runtime.memory.for_scope("s")
    memory.remember("the first entry")  # revision 1
    writes = [lambda i=i: memory.remember(NewEntry(entry_id=f"e{i}", text=f"entry {i}")) for i in range(4)]
    results, commits = _grouped(runtime, writes)
    assert commits == 1  # one COMMIT (and one fsync of DuckDB's log) for the four
    assert [result.memory.revision for result in results] == [2, 3, 4, 5]  # each its own revision, in queue order
    assert [r.revision for r in memory.revisions()] == [1, 2, 3, 4, 5]
    assert [r.change_count for r in memory.revisions()] == [1, 1, 1, 1, 1]
    assert {e.entry.entry_id for e in memory.list().entries} >= {"e0", "e1", "e2", "e3"}
    assert memory.search("entry").hits  # the index moved with every write of the group
    stats = _backend(runtime).write_groups.stats
    assert (stats.groups, stats.grouped_writes, stats.fallbacks) == (1, 4, 0)


def test_two_writes_of_a_group_expecting_the_same_version_the_first_wins(runtime):
    memory = runtime.memory.for_scope("s")
    memory.remember(NewEntry(entry_id="k", text="version one"))
    results, commits = _grouped(runtime, [
        lambda: memory.revise(ReviseRequest(entry_id="k", text="first", expected_version=1)),
        lambda: memory.revise(ReviseRequest(entry_id="k", text="second", expected_version=1)),
        lambda: memory.revise(ReviseRequest(entry_id="k", text="third", expected_version=2)),
    ])
    assert results[0].memory.revision == 2
    assert isinstance(results[1], RevisionConflictError)  # exactly as if run after the first
    assert results[2].memory.revision == 3  # expected the version the first made: it holds
    assert commits == 1
    entry = memory.get_entry("k").entry
    assert (entry.version, entry.text) == (3, "third")
    assert _backend(runtime).write_groups.stats.fallbacks == 0  # a refusal does not undo the others


def test_each_caller_gets_its_own_error_and_the_others_commit_together(runtime):
    memory = runtime.memory.for_scope("s")
    memory.remember(NewEntry(entry_id="taken", text="already here"))  # revision 1
    results, commits = _grouped(runtime, [
        lambda: memory.remember(NewEntry(entry_id="a", text="fine")),
        lambda: memory.remember("stale expectation", expected_revision=1),  # the head is 2 by then
        lambda: memory.remember(NewEntry(entry_id="taken", text="an existing id without upsert")),
        lambda: memory.remember(RememberRequest(entries=(NewEntry(entry_id="b", text="fine too"),),
                                                expected_revision=2)),
    ])
    assert results[0].memory.revision == 2
    assert isinstance(results[1], RevisionConflictError)
    assert isinstance(results[2], InputError)
    assert results[3].memory.revision == 3
    assert commits == 1
    assert [r.revision for r in memory.revisions()] == [1, 2, 3]
    assert memory.get_entry("taken").entry.text == "already here"


def test_a_write_failing_after_it_wrote_rolls_the_group_back_and_the_others_commit_alone(runtime):
    backend = _backend(runtime)
    memory = runtime.memory.for_scope("s")
    memory.remember("the first entry")  # revision 1

    def wrote_then_failed(tx: Any) -> None:
        tx.commit("remember", [], [], datetime.now(UTC))  # a revision written into the group's transaction ...
        raise StoreError("... then a failure: DuckDB has no savepoint to undo only this write")

    results, commits = _grouped(runtime, [
        lambda: memory.remember(NewEntry(entry_id="a", text="before the failure")),
        lambda: backend.write_grouped("s", wrote_then_failed),
        lambda: memory.remember(NewEntry(entry_id="b", text="after the failure")),
    ])
    assert isinstance(results[1], StoreError)  # the failure lands on its own caller ...
    assert [result.memory.revision for result in (results[0], results[2])] == [2, 3]  # ... the others commit
    assert [(r.revision, r.change_count) for r in memory.revisions()] == [(1, 1), (2, 1), (3, 1)]
    assert commits == 2  # run again one by one: the failed write's transaction rolled back
    assert backend.write_groups.stats.fallbacks == 1


def test_every_write_acknowledged_before_a_kill_inside_the_groups_is_there_after_reopening(tmp_path):
    path = tmp_path / "killed.duckdb"
    process = subprocess.Popen(programs.command("group_writer", str(path)), stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    acknowledged: list[str] = []
    groups = 0
    try:
        while len(acknowledged) < 40 or (groups == 0 and len(acknowledged) < 5000):
            line = process.stdout.readline()
            assert line, "the writer stopped before it was killed"
            entry_id, groups_so_far = line.split()
            acknowledged.append(entry_id)
            groups = int(groups_so_far)
        assert groups > 0, "no writes were grouped before the kill: the test would prove little"
    finally:
        os.kill(process.pid, signal.SIGKILL)  # while the four threads are still writing
        process.wait()
    acknowledged += [line.split()[0] for line in process.stdout.read().splitlines() if len(line.split()) == 2]
    with pcmem.open(path, embedder=None) as runtime:
        assert _backend(runtime).check().ok
        memory = runtime.memory.for_scope("groups")
        stored = {entry.entry.entry_id for entry in memory.list().entries}
        head = memory.head()
        assert head is not None
        assert [r.revision for r in memory.revisions()] == list(range(1, head.revision + 1))
    assert set(acknowledged) <= stored


def test_a_refusal_after_duckdb_aborted_the_transaction_does_not_lose_the_writes_before_it(runtime):
    """DuckDB aborts a transaction at a failed statement, and a COMMIT of it then succeeds having written nothing:
    the group must notice, or the writes before the refusal are acknowledged and lost."""
    backend = _backend(runtime)
    memory = runtime.memory.for_scope("s")
    memory.remember("the first entry")  # revision 1

    def failed_then_refused(tx: Any) -> None:
        try:
            tx._cursor.execute("INSERT INTO memories SELECT * FROM memories")  # a duplicate key: DuckDB aborts
        except Exception:  # noqa: BLE001 - a write path that turns it into its own error
            pass
        raise InputError("refused after a failed statement")

    results, _ = _grouped(runtime, [
        lambda: memory.remember(NewEntry(entry_id="a", text="acknowledged before the refusal")),
        lambda: backend.write_grouped("s", failed_then_refused),
    ])
    assert results[0].memory.revision == 2
    assert isinstance(results[1], InputError)
    assert memory.get_entry("a").entry.text == "acknowledged before the refusal"
    assert backend.write_groups.stats.fallbacks == 1


def test_writes_of_a_group_whose_leader_stopped_get_an_error_not_a_missing_result(runtime, monkeypatch):
    backend = _backend(runtime)
    memory = runtime.memory.for_scope("s")
    memory.remember("the first entry")

    def broken_transaction(scope: str) -> Any:
        raise RuntimeError("the leader stopped before BEGIN")

    monkeypatch.setattr(backend.write_groups, "open_group", broken_transaction)
    results, commits = _grouped(runtime, [lambda i=i: memory.remember(f"entry {i}") for i in range(3)])
    assert commits == 0
    assert all(isinstance(result, (RuntimeError, StoreError)) for result in results), results
    assert sum(isinstance(result, StoreError) for result in results) == 2  # the two that did not lead
