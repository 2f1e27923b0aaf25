"""After an unclean exit, every entry written before it can still be changed and erased (issue #26 item 1).

The defect was DuckDB's (1.5.5): replaying a write-ahead log leaves CREATE INDEX indexes unbound with their rows
buffered, and the checkpoint DuckDB runs when the last connection closes writes those indexes without the buffered
rows. The next process's lookups then miss the pre-crash entries — a revise inserted a second head row and hit the
primary key. pcmem checkpoints from a client right after a replay; `check` finds an index damaged before that (by
an older pcmem or another DuckDB client) and `check --repair` rebuilds it. See pcmem/store/duckdb/indexes.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb

import pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest
from pcmem.store.duckdb import indexes

WRITE_THEN_EXIT = r"""
import os, sys, pcmem
from pcmem import NewEntry, RememberRequest
runtime = pcmem.open(sys.argv[1], embedder=None)
memory = runtime.memory.for_scope("s")
memory.remember(RememberRequest(entries=tuple(
    NewEntry(entry_id=entry_id, text=f"{entry_id} was written before the crash") for entry_id in sys.argv[2:])))
os._exit(0)   # no close: whatever the store has not checkpointed stays in its write-ahead log
"""

ENTRIES = ("city", "pet", "job", "tea")
PCMEM = str(Path(sys.executable).with_name("pcmem"))


def _crash_after_writing(path: Path) -> None:
    subprocess.run([sys.executable, "-c", WRITE_THEN_EXIT, str(path), *ENTRIES], check=True, timeout=60)


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PCMEM, "--db", str(path), *args, "--json"], capture_output=True, text=True, timeout=120)


def _open_and_close_untouched(path: Path) -> None:
    """What a CLI read or a short-lived app does: open the store (replaying its log) and close it again."""
    pcmem.open(path, embedder=None).close()


def test_every_pre_crash_entry_stays_writable_from_the_cli(tmp_path):
    db = tmp_path / "memory.duckdb"
    _crash_after_writing(db)
    _open_and_close_untouched(db)
    assert _cli(db, "revise", "--scope", "s", "--expected-version", "1", "city", "Berlin now").returncode == 0
    assert _cli(db, "retire", "--scope", "s", "--expected-version", "1", "pet").returncode == 0
    upsert = _cli(db, "remember", "--scope", "s", "--id", "job", "--upsert", "job changed after the crash")
    assert upsert.returncode == 0, upsert.stderr
    forget = _cli(db, "forget", "--scope", "s", "--yes", "tea")
    assert forget.returncode == 0, forget.stderr
    check = _cli(db, "check")
    assert check.returncode == 0 and json.loads(check.stdout)["ok"], check.stdout


def test_every_pre_crash_entry_stays_writable_from_the_library(tmp_path):
    db = tmp_path / "memory.duckdb"
    _crash_after_writing(db)
    _open_and_close_untouched(db)
    with pcmem.open(db, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.revise(ReviseRequest(entry_id="city", text="Berlin now", expected_version=1))
        memory.remember(RememberRequest(upsert=True, entries=(NewEntry(entry_id="job", text="changed"),)))
        memory.forget("tea")
        heads = {item.entry.entry_id: item.entry.text for item in memory.list().entries}
    assert heads == {"city": "Berlin now", "pet": "pet was written before the crash", "job": "changed"}


def _damage_like_duckdb_1_5_5(db: Path) -> None:
    """Crash with a log, then let a plain DuckDB client replay it and close without touching an index — what
    pcmem did before the fix, and what any other DuckDB 1.5.5 client still does."""
    _crash_after_writing(db)
    duckdb.connect(str(db)).close()


def test_check_finds_indexes_that_lost_rows_and_repair_rebuilds_them(tmp_path):
    db = tmp_path / "memory.duckdb"
    _damage_like_duckdb_1_5_5(db)
    found = _cli(db, "check")
    assert found.returncode == 1
    problems = json.loads(found.stdout)["problems"]
    assert any("head_entries_by_entry" in problem and "misses 4 of 4 rows" in problem for problem in problems)
    repaired = _cli(db, "check", "--repair")
    assert repaired.returncode == 0 and json.loads(repaired.stdout)["ok"], repaired.stdout
    assert _cli(db, "revise", "--scope", "s", "--expected-version", "1", "city", "Berlin now").returncode == 0


def test_the_upgrade_to_migration_0007_cures_a_damaged_file(tmp_path):
    db = tmp_path / "memory.duckdb"
    _damage_like_duckdb_1_5_5(db)
    with duckdb.connect(str(db)) as raw:  # as a store of migration 0006 would be
        raw.execute("DELETE FROM pcmem_migrations WHERE name >= '0007'")
        raw.execute("ALTER TABLE revisions DROP COLUMN reason")  # added by 0008
        raw.execute("CREATE INDEX entry_events_by_revision ON entry_events (artifact_id, revision)")
        assert indexes.verify(raw.cursor())[0], "the file must be damaged before the upgrade, or this proves nothing"
    with pcmem.open(db, embedder=None) as runtime:
        runtime.memory.for_scope("s").revise(ReviseRequest(entry_id="city", text="Berlin now", expected_version=1))
    with duckdb.connect(str(db), read_only=True) as raw:
        assert indexes.verify(raw.cursor())[0] == []
        names = {name for (name,) in raw.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}
    assert names == {index.name for index in indexes.SECONDARY}


def test_a_sound_store_verifies_every_index(tmp_path):
    db = tmp_path / "memory.duckdb"
    with pcmem.open(db, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember(RememberRequest(entries=tuple(
            NewEntry(entry_id=f"e{i}", text=f"entry number {i} about topic {i % 7}") for i in range(3000))))
    with duckdb.connect(str(db), read_only=True) as raw:
        problems, notes = indexes.verify(raw.cursor())
    assert problems == [] and notes == []


def test_opening_looks_at_a_leftover_log_once(tmp_path, monkeypatch):
    """connect reads the log to check it and learns from that same read that DuckDB will replay it; it used to stat
    the log again afterwards (a second look that could see another file than the one checked)."""
    from pcmem.store.duckdb import connection, files

    db = tmp_path / "looked.duckdb"
    _crash_after_writing(db)
    log = str(files.wal_path(db))
    assert Path(log).stat().st_size > 0
    looks: list[str] = []

    def spy(call):  # noqa: ANN001, ANN202 - counts the calls on the log, then does them
        def counted(target, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            if str(target) == log:
                looks.append(call.__name__)
            return call(target, *args, **kwargs)
        return counted

    for name in ("open", "stat", "lstat"):
        monkeypatch.setattr(os, name, spy(getattr(os, name)))
    opened = connection.connect(db)
    monkeypatch.undo()
    try:
        assert looks == ["open"]
        assert opened.execute("SELECT count(*) FROM entry_events").fetchone() == (len(ENTRIES),)
    finally:
        opened.close()
    assert not Path(log).exists(), "the replayed log was checkpointed into the file"
