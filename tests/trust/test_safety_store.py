"""Issue 16: the store file — foreign files, damaged logs, damaged derived data, file modes, paths, locks."""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from fakes import HashEmbedder, read_only_file

import pcmem
from pcmem.errors import (
    InputError,
    StoreFormatError,
    StoreLockedError,
    StoreMissingError,
    StoreReadOnlyError,
    StoreWALError,
)
from pcmem.store.duckdb import files
from pcmem.store.duckdb.wal import damaged_wal_copies, recover_wal, scan_wal

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("statement", [
    "CREATE VIEW v AS SELECT 42 AS answer",
    "CREATE SEQUENCE s",
    "CREATE MACRO twice(x) AS x * 2",
    "CREATE SCHEMA theirs",
    "CREATE TYPE mood AS ENUM ('ok', 'sad')",
])
def test_a_duckdb_file_with_only_views_sequences_or_macros_is_someone_elses(tmp_path, statement):
    path = tmp_path / "theirs.duckdb"
    connection = duckdb.connect(str(path))
    connection.execute(statement)
    connection.close()
    before = path.read_bytes()
    with pytest.raises(StoreFormatError, match="belongs to something else"):
        pcmem.open(path, embedder=None)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.duckdb"]


KILLED_AFTER_IMPORT = textwrap.dedent("""
    import os, sys, pcmem
    with_runtime = pcmem.open(sys.argv[1], embedder=None)
    memory = with_runtime.memory.for_scope("s")
    for i in range(3):
        memory.remember(f"acknowledged note {i} " + "x" * 200)
    print("acknowledged", flush=True)
    os.kill(os.getpid(), 9)
""")


def _killed_store(tmp_path: Path) -> Path:
    path = tmp_path / "m.duckdb"
    pcmem.open(path, embedder=None).close()
    done = subprocess.run([sys.executable, "-c", KILLED_AFTER_IMPORT, str(path)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == -signal.SIGKILL and "acknowledged" in done.stdout, done.stderr
    assert files.wal_path(path).stat().st_size > 0
    return path


def test_an_intact_leftover_log_is_replayed(tmp_path):
    path = _killed_store(tmp_path)
    with pcmem.open(path, embedder=None) as runtime:
        assert runtime.memory.for_scope("s").head().revision == 3
        assert runtime.backend.check().ok


def test_a_leftover_log_with_a_damaged_header_is_refused_and_left_alone(tmp_path):
    path = _killed_store(tmp_path)
    wal = files.wal_path(path)
    wal.write_bytes(b"\0" * 16 + wal.read_bytes()[16:])
    before = (path.read_bytes(), wal.read_bytes())
    with pytest.raises(StoreWALError, match=r"mv .*\.wal.*\.wal\.damaged"):
        pcmem.open(path, embedder=None)
    assert (path.read_bytes(), wal.read_bytes()) == before
    wal.rename(wal.with_name(wal.name + ".damaged"))  # what the message says to do
    with pcmem.open(path, embedder=None) as runtime:
        assert runtime.backend.check().ok


@pytest.mark.parametrize(("cut", "kept"), [(7, 2), (None, None)])
def test_a_log_ending_inside_a_transaction_is_set_aside_and_its_complete_transactions_replayed(tmp_path, caplog, cut,
                                                                                              kept):
    """What a process killed inside a COMMIT leaves (DuckDB writes a commit's log in 4 KiB pieces): the records of a
    transaction without its closing FLUSH, never acknowledged. It was refused, and the store stayed closed to every
    process until someone ran ``check --recover-wal``; now the open does that and says so. ``None``: half the log."""
    path = _killed_store(tmp_path)
    wal = files.wal_path(path)
    data = wal.read_bytes()
    damaged = data[:-cut] if cut else data[: len(data) // 2]
    wal.write_bytes(damaged)
    complete = scan_wal(damaged).transactions
    assert kept is None or complete == kept
    with caplog.at_level(logging.WARNING), pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        head = memory.head()
        assert (0 if head is None else head.revision) == complete  # one remember per transaction after the store's
        assert runtime.backend.check().ok
    copies = damaged_wal_copies(path)
    assert [c.read_bytes() for c in copies] == [damaged]  # the whole log, as it was, for whoever wants to look
    assert f"{complete} complete transaction(s)" in caplog.text and str(copies[0]) in caplog.text


def test_a_read_only_store_with_a_log_cut_short_is_refused_and_recovered_on_request(tmp_path, monkeypatch):
    path = _killed_store(tmp_path)
    wal = files.wal_path(path)
    damaged = wal.read_bytes()[:-7]  # the last transaction cut short, as a crash inside a commit leaves it
    wal.write_bytes(damaged)
    with read_only_file(path, monkeypatch):
        with pytest.raises(StoreWALError, match=r"2 complete transaction\(s\).*check --recover-wal"):
            pcmem.open(path, embedder=None)
        assert wal.read_bytes() == damaged
    done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "check", "--recover-wal", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    recovered = json.loads(done.stdout)["recovered_wal"]
    assert recovered["kept_transactions"] == 2 and recovered["dropped_bytes"] > 0
    assert Path(recovered["copy"]).read_bytes() == damaged  # the whole log is kept for whoever wants to look
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        assert memory.head().revision == 2
        assert [e.entry.text[:20] for e in memory.list().entries] == sorted(
            f"acknowledged note {i} "[:20] for i in range(2))
        assert runtime.backend.check().ok


def test_a_log_with_a_damaged_header_has_nothing_to_recover_and_is_set_aside(tmp_path):
    path = _killed_store(tmp_path)
    wal = files.wal_path(path)
    wal.write_bytes(b"\0" * 16 + wal.read_bytes()[16:])
    with pytest.raises(StoreWALError, match="Nothing in it can be replayed"):
        pcmem.open(path, embedder=None)
    recovery = recover_wal(path)
    assert (recovery.kept_transactions, wal.exists(), recovery.copy.exists()) == (0, False, True)
    assert recover_wal(path).copy is None  # nothing left to do: absent log
    with pcmem.open(path, embedder=None) as runtime:
        assert runtime.memory.for_scope("s").head() is None  # the log held every write; a backup copy keeps it


def _store_with_entries(path: Path) -> None:
    with pcmem.open(path, embedder=HashEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("kiwis grow on vines")
        memory.remember("the team deploys on fridays")


@pytest.mark.parametrize("damage, expected", [
    ("INSERT INTO head_entries SELECT artifact_id, 'ghost', entry_version_id, state FROM head_entries LIMIT 1",
     "head projection"),
    ("DROP TABLE embeddings", "active vector table"),
    ("DROP SCHEMA fts_main_fts_docs CASCADE", "full-text index"),
])
def test_check_sees_damage_and_repair_rebuilds_everything(db_path, damage, expected):
    _store_with_entries(db_path)
    connection = duckdb.connect(str(db_path))
    connection.execute(damage)
    connection.close()
    with pcmem.open(db_path, embedder=HashEmbedder()) as runtime:
        report = runtime.backend.check()
        assert not report.ok and any(expected in problem for problem in report.problems), report.problems
        assert runtime.backend.repair().ok
        runtime.reindex()
        page = runtime.memory.for_scope("s").search(pcmem.SearchMemoryRequest(query="kiwis vines", mode="hybrid"))
        assert page.hits and page.hits[0].text == "kiwis grow on vines"


def test_every_created_file_is_private_and_every_created_folder_too(tmp_path):
    path = tmp_path / "a" / "b" / "m.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("secret text")
        wal = files.wal_path(path)
        assert wal.exists() and stat.S_IMODE(wal.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_new_path_in_a_new_folder_creates_the_store(tmp_path):
    path = tmp_path / "new" / "m.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("target", ["", "   ", ":memory:", "s3://bucket/m.duckdb", "http://host/m.duckdb",
                                    "md:my_db", "https://x"])
def test_targets_that_are_not_local_files_are_refused(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError):
        pcmem.open(target, embedder=None)
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        pcmem.open(fifo, embedder=None)


def test_create_false_refuses_a_missing_store_and_creates_nothing(tmp_path):
    from pcmem.compose.backends import open_backend

    with pytest.raises(StoreMissingError, match="no store at"):
        open_backend(tmp_path / "missing" / "m.duckdb", create=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", [
    "DELETE FROM pcmem_migrations WHERE seq = 2",
    "DROP TABLE pcmem_meta; CREATE TABLE pcmem_meta (k VARCHAR)",
    "INSERT INTO pcmem_meta VALUES ('fts_analyzer', 'no-such-analyzer') ON CONFLICT DO UPDATE SET value = 'x'",
])
def test_damaged_pcmem_metadata_is_a_typed_error(db_path, damage):
    pcmem.open(db_path, embedder=None).close()
    connection = duckdb.connect(str(db_path))
    connection.execute(damage)
    connection.close()
    with pytest.raises(pcmem.StoreError):
        pcmem.open(db_path, embedder=None)


def test_a_read_only_store_reads_and_refuses_writes(tmp_path, monkeypatch):
    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("kept")
    with read_only_file(path, monkeypatch):
        before = path.read_bytes()
        with pcmem.open(path, embedder=None) as runtime:
            memory = runtime.memory.for_scope("s")
            assert [e.entry.text for e in memory.list().entries] == ["kept"]
            with pytest.raises(StoreReadOnlyError, match="read-only"):
                memory.remember("refused")
        assert path.read_bytes() == before


#: A program that opens the store file itself (not through pcmem), so it holds the file without serving it: since
#: #28 a pcmem process holding the file serves the others instead (tests/owner/test_owner.py).
HOLDER = textwrap.dedent("""
    import sys, time, duckdb, pcmem
    pcmem.open(sys.argv[1], embedder=None).close()
    connection = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    time.sleep(60)
""")


def test_a_store_held_by_another_process_names_it(tmp_path):
    path = tmp_path / "m.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "holding"
        named = f"process {holder.pid}.*does not answer where pcmem owners listen.*without serving it"
        with pytest.raises(StoreLockedError, match=named):
            pcmem.open(path, embedder=None, lock_timeout=0.2)
    finally:
        holder.kill()
        holder.wait()


def test_forget_erases_the_set_aside_copies_of_a_damaged_log(tmp_path):
    """A copy kept by `check --recover-wal` (or moved aside by hand, as the refusal advises) holds the text of the
    entries in the log; forget promises that text is gone from every file next to the store (issue 26)."""
    path = _killed_store(tmp_path)
    wal = files.wal_path(path)
    wal.write_bytes(wal.read_bytes()[:-7])  # the last transaction cut short
    done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "check", "--recover-wal", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    copy = Path(json.loads(done.stdout)["recovered_wal"]["copy"])
    by_hand = wal.with_name(wal.name + ".damaged.7")
    by_hand.write_bytes(copy.read_bytes())
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        first = next(e for e in memory.list().entries if e.entry.text.startswith("acknowledged note 0"))
        memory.forget(first.entry.entry_id)
        assert [e.entry.text[:19] for e in memory.list().entries] == ["acknowledged note 1"]
    holding = [p.name for p in tmp_path.iterdir() if p.is_file() and b"acknowledged note 0" in p.read_bytes()]
    assert holding == []
    assert not copy.exists() and not by_hand.exists()
