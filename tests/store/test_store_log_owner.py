"""Issue 26: whose write-ahead log is it — foreign and stale logs, adopted files, read-only file systems."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

import pcmem
from pcmem.errors import StoreReadOnlyError, StoreWALError
from pcmem.store.duckdb import files
from pcmem.store.duckdb.wal import read_store_header, read_wal_header
from pcmem_bench import programs

ROOT = Path(__file__).resolve().parents[2]

KILLED_OTHER_DATABASE = textwrap.dedent("""
    import os, sys, duckdb
    db = duckdb.connect(sys.argv[1])
    db.execute("CREATE TABLE theirs (x INTEGER)")
    db.execute("INSERT INTO theirs VALUES (42)")
    print("written", flush=True)
    os.kill(os.getpid(), 9)
""")


def _kill(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == -signal.SIGKILL and done.stdout.strip(), done.stderr


def _store(path: Path) -> Path:
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("mine").remember("my own note")
    return path


def _refused_untouched(path: Path, match: str) -> None:
    wal = files.wal_path(path)
    before = (path.read_bytes(), wal.read_bytes())
    with pytest.raises(StoreWALError, match=match) as raised:
        pcmem.open(path, embedder=None)
    message = str(raised.value)
    assert str(wal) in message and "\n" not in message
    assert f"mv '{wal}'" in message  # what to do: set the log aside
    assert (path.read_bytes(), wal.read_bytes()) == before


def _scopes_after_setting_the_log_aside(path: Path) -> list[str]:
    wal = files.wal_path(path)
    wal.rename(wal.with_name(wal.name + ".aside"))
    with pcmem.open(path, embedder=None) as runtime:
        assert runtime.backend.check().ok
        return [summary.scope for summary in runtime.backend.scope_summaries()]


def test_another_duckdb_databases_log_is_refused_naming_the_log(tmp_path):
    path = _store(tmp_path / "m.duckdb")
    theirs = tmp_path / "theirs.duckdb"
    _kill([sys.executable, "-c", KILLED_OTHER_DATABASE, str(theirs)])
    shutil.copy(files.wal_path(theirs), files.wal_path(path))
    _refused_untouched(path, "belongs to another database")
    assert _scopes_after_setting_the_log_aside(path) == ["mine"]


def test_another_pcmem_stores_log_is_refused_naming_the_log(tmp_path):
    """Another store's log replayed without a word: its scope appeared in this store and `check` said ok."""
    path = _store(tmp_path / "m.duckdb")
    other = _store(tmp_path / "other.duckdb")
    _kill(programs.command("killed_writer", str(other), "theirs"))  # three notes, no close
    shutil.copy(files.wal_path(other), files.wal_path(path))
    _refused_untouched(path, "belongs to another database")
    assert _scopes_after_setting_the_log_aside(path) == ["mine"]


@pytest.mark.parametrize("checkpoints_since, says", [(1, "DuckDB says.*older version"), (3, "older state of this store")])
def test_a_stale_log_of_this_store_is_refused_naming_the_log(tmp_path, checkpoints_since, says):
    """One checkpoint behind, DuckDB itself refuses (the message must still name the log); further behind, pcmem
    refuses before DuckDB opens the file."""
    path = _store(tmp_path / "m.duckdb")
    _kill(programs.command("killed_writer", str(path), "s"))
    stale = files.wal_path(path).read_bytes()
    written_at = read_wal_header(stale).checkpoint_iteration
    later = 0
    while read_store_header(path).checkpoint_iteration < written_at + checkpoints_since:
        with pcmem.open(path, embedder=None) as runtime:  # the first replays the log; each close checkpoints
            runtime.memory.for_scope("later").remember(f"written later {later}")
            later += 1
    behind = read_store_header(path).checkpoint_iteration - written_at
    # pcmem checkpoints right after a replay, so the first open may move the file on by two checkpoints at once
    says = says if behind == checkpoints_since else "older state of this store"
    files.wal_path(path).write_bytes(stale)  # a backup copy of the old log put back
    _refused_untouched(path, says)
    files.wal_path(path).unlink()
    with pcmem.open(path, embedder=None) as runtime:
        assert len(runtime.memory.for_scope("s").list().entries) == 3
        assert len(runtime.memory.for_scope("later").list().entries) == later


def test_a_store_file_restored_from_a_backup_refuses_its_newer_log(tmp_path):
    path = _store(tmp_path / "m.duckdb")
    backup = path.read_bytes()
    with pcmem.open(path, embedder=None) as runtime:  # one more checkpoint after the backup
        runtime.memory.for_scope("s").remember("after the backup")
    _kill(programs.command("killed_writer", str(path), "s"))
    path.write_bytes(backup)
    _refused_untouched(path, "newer state of this store.*restored from a backup")


def test_a_log_next_to_a_missing_store_is_refused(tmp_path):
    theirs = tmp_path / "theirs.duckdb"
    _kill([sys.executable, "-c", KILLED_OTHER_DATABASE, str(theirs)])
    path = tmp_path / "m.duckdb"
    shutil.copy(files.wal_path(theirs), files.wal_path(path))
    with pytest.raises(StoreWALError, match=r"m\.duckdb\.wal.*no store file"):
        pcmem.open(path, embedder=None)
    assert not path.exists()


def test_a_log_duckdb_itself_cannot_replay_is_blamed_not_the_store(tmp_path):
    """A store from before logs were bound to their file (DuckDB's v1.0 format, as older pcmem made them): a foreign
    log naming a table the store lacks fails inside DuckDB — the message names the log, not the store."""
    path = tmp_path / "legacy.duckdb"
    duckdb.connect(str(path)).close()  # the v1.0 storage format every pcmem store had before
    _store(path)
    theirs = tmp_path / "theirs.duckdb"
    duckdb.connect(str(theirs)).execute("CREATE TABLE theirs (x INTEGER)").close()
    db = duckdb.connect(str(theirs))
    db.execute("INSERT INTO theirs VALUES (1)")
    shutil.copy(files.wal_path(theirs), tmp_path / "kept.wal")
    db.close()
    shutil.copy(tmp_path / "kept.wal", files.wal_path(path))
    _refused_untouched(path, "cannot be replayed into .*DuckDB says")
    assert _scopes_after_setting_the_log_aside(path) == ["mine"]


# --- item 11: a DuckDB file made by another tool -------------------------------------------------------------------


def test_an_empty_duckdb_file_made_elsewhere_becomes_private_when_adopted(tmp_path):
    path = tmp_path / "made-elsewhere.duckdb"
    duckdb.connect(str(path)).close()
    os.chmod(path, 0o644)
    with pcmem.open(path, embedder=None) as runtime:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        runtime.memory.for_scope("s").remember("secret text")
        assert stat.S_IMODE(files.wal_path(path).stat().st_mode) == 0o600


# --- item 10: a new store on a read-only file system ---------------------------------------------------------------

READ_ONLY_MOUNT = "mount -t tmpfs -o ro tmpfs {folder}"


def _in_read_only_mount(folder: Path, *pcmem_args: str) -> subprocess.CompletedProcess[str]:
    """Run pcmem where ``folder`` is a real read-only file system: a private mount namespace (needs CAP_SYS_ADMIN,
    which the test container has; skipped elsewhere) mounts a read-only tmpfs over it, seen by that process only."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", READ_ONLY_MOUNT.format(folder=folder)],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a read-only file system here: {probe.stderr.strip()}")
    command = " ".join(["exec", sys.executable, "-m", "pcmem", *(f"'{arg}'" for arg in pcmem_args)])
    return subprocess.run(["unshare", "-m", "sh", "-c", f"{READ_ONLY_MOUNT.format(folder=folder)} && {command}"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize("name", ["m.duckdb", "sub/m.duckdb"])
def test_a_new_store_on_a_read_only_file_system_is_one_typed_line(tmp_path, name):
    folder = tmp_path / "ro"
    folder.mkdir()
    done = _in_read_only_mount(folder, "--db", str(folder / name), "remember", "--scope", "s", "hello")
    assert done.returncode == 12, done.stderr  # StoreReadOnlyError
    assert done.stderr.count("\n") == 1 and "read-only" in done.stderr, done.stderr


def test_creating_a_folder_on_a_read_only_file_system_is_a_read_only_error(tmp_path, monkeypatch):
    """The same refusal without a mount: mkdir answers EROFS, as it does on a read-only file system."""
    def read_only(path, mode=0o777):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(os, "mkdir", read_only)
    with pytest.raises(StoreReadOnlyError, match="read-only file system"):
        pcmem.open(tmp_path / "sub" / "m.duckdb", embedder=None)
