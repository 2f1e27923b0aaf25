"""Issue 18: the API an agent or app needs — per-entry CAS, internal retry, upsert by key, one read rule."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from pcmem import (
    EntryNotFoundError,
    InputError,
    ListRequest,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    RevisionConflictError,
    RevisionNotFoundError,
)

# --- per-entry compare-and-swap --------------------------------------------------------------------------------


def test_expected_version_ignores_writes_to_other_entries(project):
    project.remember(RememberRequest(entries=(NewEntry(text="Ana lives in Porto.", entry_id="city"),
                                              NewEntry(text="Ana drinks tea.", entry_id="drink"))))
    read = project.get_entry("city")
    project.revise(ReviseRequest(entry_id="drink", text="Ana drinks coffee.", expected_version=1))  # head moves
    result = project.revise(ReviseRequest(entry_id="city", text="Ana lives in Lisbon.",
                                          expected_version=read.entry.version))
    assert result.memory.revision == 3 and project.get_entry("city").entry.version == 2
    with pytest.raises(RevisionConflictError, match="expected version 1"):  # a stale read of *this* entry
        project.revise(ReviseRequest(entry_id="city", text="Ana lives in Faro.", expected_version=1))
    with pytest.raises(RevisionConflictError):  # scope-level CAS is unchanged
        project.revise(ReviseRequest(entry_id="city", text="Ana lives in Faro.", expected_revision=2))
    project.retire(RetireRequest(entry_id="city", expected_version=2))
    project.reactivate(ReactivateRequest(entry_id="city", expected_version=2))
    assert project.get_entry("city").state == "active"


def test_a_head_write_needs_some_expectation():
    with pytest.raises(InputError, match="expected_revision .* or expected_version"):
        ReviseRequest(entry_id="x", text="t")
    with pytest.raises(InputError):
        RetireRequest(entry_id="x", expected_version=0)


def test_writers_of_different_entries_never_see_a_conflict(project):
    """The mem0-style load of issue 18: 4 threads x 60 updates of their own entries, 0 conflicts surfaced."""
    project.remember(RememberRequest(entries=tuple(NewEntry(text=f"fact {i} v1", entry_id=f"fact-{i}")
                                                   for i in range(4))))
    conflicts = []

    def worker(i: int) -> None:
        for n in range(60):
            entry = project.get_entry(f"fact-{i}")
            try:
                project.revise(ReviseRequest(entry_id=f"fact-{i}", text=f"fact {i} v{n + 2}",
                                             expected_version=entry.entry.version))
            except RevisionConflictError as error:
                conflicts.append(error)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(worker, range(4)))
    assert conflicts == []
    assert {project.get_entry(f"fact-{i}").entry.version for i in range(4)} == {61}
    assert project.head().revision == 1 + 4 * 60


def test_remember_retries_a_lost_race_internally(project, monkeypatch):
    from pcmem.errors import ConcurrentWriteError
    from pcmem.memory import scoped

    calls = []
    original = scoped.SyncScopedMemory._remember

    def flaky(self, request, keyed):
        calls.append(1)
        if len(calls) < 3:
            raise ConcurrentWriteError("another writer committed to the same scope at the same moment")
        return original(self, request, keyed)

    monkeypatch.setattr(scoped.SyncScopedMemory, "_remember", flaky)
    assert project.remember("written after two lost races").memory.revision == 1
    assert len(calls) == 3
    with pytest.raises(ConcurrentWriteError):  # a compare-and-swap write surfaces the race
        calls.clear()
        project.remember(RememberRequest(entries=(NewEntry(text="x"),), expected_revision=1))


# --- upsert by key -----------------------------------------------------------------------------------------------


def test_upsert_creates_updates_and_reports_no_ops(project):
    created = project.remember("Ana lives in Porto.", entry_id="city", upsert=True)
    assert created.memory.revision == 1 and not created.unchanged
    same = project.remember("Ana lives in Porto.", entry_id="city", upsert=True)
    assert same.unchanged and same.unchanged_entry_ids == ("city",) and same.memory.revision == 1
    assert same.citations == created.citations
    moved = project.remember("Ana lives in Lisbon.", entry_id="city", upsert=True)
    assert moved.memory.revision == 2 and project.get_entry("city").entry.version == 2
    assert project.revisions()[-1].operation == "revise"
    with pytest.raises(InputError, match="already exist"):  # without upsert an existing id is still refused
        project.remember("Ana lives in Faro.", entry_id="city")


def test_upsert_compares_kind_and_metadata_as_canonical_json(project):
    project.remember(NewEntry(text="t", entry_id="k", metadata={"n": 1}), upsert=True)
    assert project.remember(NewEntry(text="t", entry_id="k", metadata={"n": 1}), upsert=True).unchanged
    for metadata in ({"n": True}, {"n": 1.0}):  # Python says 1 == True == 1.0; the stored JSON does not
        assert not project.remember(NewEntry(text="t", entry_id="k", metadata=metadata), upsert=True).unchanged
    assert not project.remember(NewEntry(text="t", entry_id="k", kind="preference", metadata={"n": 1.0}),
                                upsert=True).unchanged
    assert project.get_entry("k").entry.version == 4


def test_upsert_of_a_batch_mixes_new_changed_and_unchanged_in_one_revision(project):
    project.remember(RememberRequest(entries=(NewEntry(text="a", entry_id="a"), NewEntry(text="b", entry_id="b"))))
    project.retire(RetireRequest(entry_id="b", expected_version=1))
    result = project.remember(RememberRequest(upsert=True, entries=(
        NewEntry(text="a", entry_id="a"), NewEntry(text="b", entry_id="b"), NewEntry(text="c", entry_id="c"))))
    assert result.memory.revision == 3 and result.unchanged_entry_ids == ("a",)
    assert [c.entry_id for c in result.citations] == ["a", "b", "c"]
    assert project.get_entry("b").state == "active"  # an upsert of a retired entry makes it active again
    assert {c.entry_id for c in project.changes(2).changes} == {"b", "c"}


# --- one rule for reads -------------------------------------------------------------------------------------------


def test_a_scope_with_no_memory_reads_as_empty_and_unknown_entries_are_not_found(runtime):
    nowhere = runtime.memory.for_scope("nowhere")
    assert nowhere.list().entries == () and nowhere.changes().changes == () and nowhere.revisions() == []
    assert nowhere.search("anything").hits == ()
    for call in (lambda: nowhere.get_entry("x"), lambda: nowhere.history("x")):
        with pytest.raises(EntryNotFoundError):
            call()
    with pytest.raises(EntryNotFoundError):
        nowhere.revise(ReviseRequest(entry_id="x", text="t", expected_version=1))
    with pytest.raises(RevisionNotFoundError):
        nowhere.changes(1)
    assert nowhere.list(ListRequest(limit=5)).next_cursor is None
    assert threading.active_count() >= 1


# --- erasure: the bytes leave the file ---------------------------------------------------------------------------


def test_forgotten_text_is_no_longer_in_the_store_files(tmp_path):
    import secrets

    from fakes import HashEmbedder

    import pcmem

    marker = "ZQX" + secrets.token_hex(12)
    path = tmp_path / "erase.duckdb"
    with pcmem.open(path, embedder=HashEmbedder()) as runtime:
        scope = runtime.memory.for_scope("user:ana")
        scope.remember(RememberRequest(entries=tuple(NewEntry(text=f"filler note number {i} about tea")
                                                     for i in range(300))))
        scope.remember(NewEntry(text=f"my password is {marker}", entry_id="secret", metadata={"pw": marker}))
        scope.revise(ReviseRequest(entry_id="secret", text=f"my new password is {marker}x", expected_version=1))
    assert _occurrences(path, marker) > 0  # the test can see the marker before it is forgotten
    with pcmem.open(path, embedder=HashEmbedder()) as runtime:
        scope = runtime.memory.for_scope("user:ana")
        scope.forget("secret")
        assert _occurrences(path, marker) == 0  # already when forget returns
        assert len(scope.list().entries) == 300
    assert _occurrences(path, marker) == 0
    assert _occurrences(path, marker.lower()) == 0  # the analysed (casefolded) index term too
    with pcmem.open(path, embedder=HashEmbedder()) as runtime:
        from pcmem.store.duckdb import DuckDBBackend

        assert isinstance(runtime.backend, DuckDBBackend)
        report = runtime.backend.check()
        assert report.ok, report.problems
        assert report.tombstones == 1
        repaired = runtime.backend.repair()  # rebuilding derived data from the log keeps the tombstone
        assert repaired.ok and repaired.tombstones == 1
        assert runtime.memory.for_scope("user:ana").search("tea").hits


def _occurrences(path, marker: str) -> int:
    found = 0
    for file in (path, path.with_name(path.name + ".wal")):
        if file.exists():
            found += file.read_bytes().count(marker.encode())
    return found


# --- the CLI exposes the same ------------------------------------------------------------------------------------


def test_cli_upsert_forget_paging_and_several_scopes(tmp_path):
    from cli_runner import invoke, ok, run, run_json, store_path

    created = run_json(tmp_path, "remember", "--scope", "user:ana", "--id", "city", "--upsert", "Ana lives in Porto.")
    assert created["memory"]["revision"] == 1
    same = run_json(tmp_path, "remember", "--scope", "user:ana", "--id", "city", "--upsert", "Ana lives in Porto.")
    assert same["unchanged"] and same["unchanged_entry_ids"] == ["city"]
    run_json(tmp_path, "remember", "--scope", "project", "--kind", "decision", "Porto office opens in May.")
    page = run_json(tmp_path, "search", "--scope", "user:ana", "--scope", "project", "--mode", "fts", "Porto")
    assert len(page["hits"]) == 2 and len(page["memories"]) == 2
    page = run_json(tmp_path, "search", "--scope", "user:ana", "--scope", "project", "--mode", "fts",
                    "--kind", "decision", "Porto")
    assert [h["kind"] for h in page["hits"]] == ["decision"]
    run_json(tmp_path, "revise", "--scope", "user:ana", "--expected-version", "1", "city", "Ana lives in Lisbon.")
    listed = run_json(tmp_path, "list", "--scope", "user:ana", "--limit", "1")
    assert listed["next_cursor"] is None and len(listed["entries"]) == 1
    refused = invoke(["--db", str(store_path(tmp_path)), "forget", "--scope", "user:ana", "city"], env=None)
    assert refused.exit_code != 0  # no --yes and no confirmation on stdin: nothing erased
    assert run_json(tmp_path, "show", "--scope", "user:ana", "city")["entry"]["text"] == "Ana lives in Lisbon."
    ok(run(tmp_path, "forget", "--scope", "user:ana", "--yes", "city"))
    gone = run(tmp_path, "show", "--scope", "user:ana", "city")
    assert gone.exit_code == 4 and "forgotten" in gone.stderr
    assert run_json(tmp_path, "list", "--scope", "nobody")["entries"] == []


def test_migrate_copies_a_store_with_forgotten_entries(tmp_path):
    import pcmem
    from pcmem.store.duckdb import DuckDBBackend
    from pcmem.store.migrate import migrate

    with pcmem.open(tmp_path / "a.duckdb") as runtime:
        scope = runtime.memory.for_scope("user:ana")
        scope.remember(RememberRequest(entries=(NewEntry(text="secret one", entry_id="s"),
                                                NewEntry(text="kept", entry_id="k"))))
        scope.revise(ReviseRequest(entry_id="s", text="secret two", expected_version=1))
        scope.forget("s")
    source, destination = DuckDBBackend(tmp_path / "a.duckdb"), DuckDBBackend(tmp_path / "b.duckdb")
    try:
        report = migrate(source, destination)
        assert report.verified, report.problems
        assert destination.check().ok and destination.check().tombstones == 1
    finally:
        source.close()
        destination.close()
    assert b"secret" not in (tmp_path / "b.duckdb").read_bytes()


def test_every_public_method_says_what_it_returns_and_raises():
    import inspect

    import pcmem
    from pcmem.memory.scoped import SyncScopedMemory
    from pcmem.memory.service import MemoryService, ScopedMemory, SyncMemoryService

    missing = []
    for cls in (SyncScopedMemory, ScopedMemory, SyncMemoryService, MemoryService, pcmem.SyncRuntime, pcmem.Runtime):
        for name, member in vars(cls).items():
            if name.startswith("_") or not callable(member):
                continue
            doc = inspect.getdoc(member) or ""
            if "As :meth:" not in doc and "raise" not in doc.lower():
                missing.append(f"{cls.__name__}.{name}")
    assert missing == []


async def test_a_cancelled_async_remember_may_still_commit(tmp_path):
    """Documented cancellation semantics: the worker thread cannot be interrupted, so the write lands anyway and an
    upsert by key makes the caller's retry a no-op."""
    import asyncio

    import pcmem
    from pcmem.memory import scoped

    entered, release = threading.Event(), threading.Event()
    original = scoped.SyncScopedMemory._remember

    def slow(self, request, keyed):
        entered.set()
        release.wait(10)
        return original(self, request, keyed)

    async with pcmem.open_async(tmp_path / "c.duckdb", embedder=None) as runtime:
        scope = runtime.memory.for_scope("chat")
        scoped.SyncScopedMemory._remember = slow
        try:
            task = asyncio.create_task(scope.remember("Ana prefers tea.", entry_id="drink", upsert=True))
            await asyncio.to_thread(entered.wait, 10)
            task.cancel()
            release.set()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            scoped.SyncScopedMemory._remember = original
        for _ in range(100):  # the worker thread finishes the write after the caller was cancelled
            if await scope.head() is not None:
                break
            await asyncio.sleep(0.02)
        assert (await scope.get_entry("drink")).entry.text == "Ana prefers tea."
        retry = await scope.remember("Ana prefers tea.", entry_id="drink", upsert=True)
        assert retry.unchanged
