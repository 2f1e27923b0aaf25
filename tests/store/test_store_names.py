"""Issue 26: one store file, many spellings — hard links, symlinks, URIs, NUL, and the log's file type."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import pcmem
from pcmem.compose.backends import open_backend
from pcmem.errors import InputError, StoreWALError
from pcmem.store.duckdb import files
from pcmem_bench import programs

ROOT = Path(__file__).resolve().parents[2]
PCMEM = [sys.executable, "-m", "pcmem"]


def _cli(*args: str, timeout: float = 60, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PCMEM, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


# --- item 3: one file under two names ------------------------------------------------------------------------------


def test_a_hard_link_is_the_same_store_to_the_registry(tmp_path):
    path = tmp_path / "a.duckdb"
    pcmem.open(path, embedder=None).close()
    os.link(path, tmp_path / "b.duckdb")
    first, second = open_backend(path), open_backend(tmp_path / "b.duckdb")
    try:
        assert first is second
    finally:
        first.close()
        second.close()


def test_writes_through_two_names_of_one_file_are_all_kept(tmp_path):
    """Two DuckDB instances on one inode, each with its own write lock and log, lost half the acknowledged writes."""
    path = tmp_path / "a.duckdb"
    pcmem.open(path, embedder=None).close()
    other_name = tmp_path / "b.duckdb"
    os.link(path, other_name)
    first = pcmem.open(path, embedder=None)
    second = pcmem.open(other_name, embedder=None)
    try:
        for i in range(15):
            first.memory.for_scope("one").remember(f"through the first name {i}")
            second.memory.for_scope("two").remember(f"through the second name {i}")
    finally:
        first.close()
        second.close()
    for name in (path, other_name):
        with pcmem.open(name, embedder=None) as runtime:
            assert [len(runtime.memory.for_scope(scope).list().entries) for scope in ("one", "two")] == [15, 15]
            assert runtime.backend.check().ok


def test_a_new_store_under_two_names_is_one_backend_once_created(tmp_path):
    """Before the file exists its name is the key; once created, its identity: a second name finds the first."""
    path = tmp_path / "new.duckdb"
    backend = open_backend(path)
    try:
        os.link(path, tmp_path / "again.duckdb")
        other = open_backend(tmp_path / "again.duckdb")
        assert other is backend
        other.close()
    finally:
        backend.close()


# --- item 5: a store reached through a symlink ---------------------------------------------------------------------


def _linked_store(tmp_path: Path) -> tuple[Path, Path]:
    target = tmp_path / "real" / "m.duckdb"
    pcmem.open(target, embedder=None).close()
    link = tmp_path / "elsewhere" / "link.duckdb"
    link.parent.mkdir()
    link.symlink_to(target)
    return target, link


def test_through_a_symlink_the_log_is_private_and_next_to_the_target(tmp_path):
    target, link = _linked_store(tmp_path)
    with pcmem.open(link, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("secret text")
        wal = files.wal_path(target)
        assert wal.exists() and stat.S_IMODE(wal.stat().st_mode) == 0o600
        assert runtime.backend.path == target
    assert not files.wal_path(link).exists()


def test_through_a_symlink_a_cut_log_next_to_the_target_is_set_aside_next_to_the_target(tmp_path):
    target, link = _linked_store(tmp_path)
    done = subprocess.run(programs.command("killed_writer", str(link), "s"), capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # three notes acknowledged, then SIGKILL: its log stays
    assert done.returncode == -signal.SIGKILL and "acknowledged" in done.stdout, done.stderr
    wal = files.wal_path(target)
    cut = wal.read_bytes()[:-7]  # the last transaction cut short, as a kill inside its commit leaves it
    wal.write_bytes(cut)
    with pcmem.open(link, embedder=None) as runtime:
        assert runtime.memory.for_scope("s").head().revision == 2 and runtime.backend.check().ok
    assert wal.with_name(wal.name + ".damaged").read_bytes() == cut
    assert not files.wal_path(link).exists() and not link.with_name(link.name + ".wal.damaged").exists()


# --- item 6: URIs and other spellings that are not a path ----------------------------------------------------------


@pytest.mark.parametrize("spelling", ["file:{path}", "file://{path}", "file://localhost{path}"])
def test_a_file_uri_is_refused_naming_the_plain_path(tmp_path, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "real.duckdb"
    pcmem.open(path, embedder=None).close()
    before = sorted(tmp_path.iterdir())
    for target in (spelling.format(path=path), Path(spelling.format(path=path))):
        with pytest.raises(InputError, match=f"plain path.*{path}"):
            pcmem.open(target, embedder=None)
    assert sorted(tmp_path.iterdir()) == before  # no ./file:/… folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("target", ["md:my_db", "motherduck:x", "s3:bucket/m.duckdb", "notes:v2.duckdb",
                                    "hf://datasets/x", ":memory:", "file:rel.duckdb"])
def test_anything_with_a_scheme_is_a_typed_refusal_for_path_objects_too(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    for spelled in (target, Path(target)):
        with pytest.raises(InputError):
            pcmem.open(spelled, embedder=None)
    assert list(tmp_path.iterdir()) == []


def test_a_name_with_a_colon_opens_when_written_as_a_relative_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pcmem.open("./notes:v2.duckdb", embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("kept")
    assert (tmp_path / "notes:v2.duckdb").is_file()


def test_the_cli_refuses_a_file_uri_in_one_line(tmp_path):
    path = tmp_path / "real.duckdb"
    done = _cli("--db", f"file:{path}", "remember", "--scope", "s", "hello", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"plain path {path}" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []  # neither the file nor a ./file:/… folder
    done = _cli("--db", "md:my_db", "list", "--scope", "s")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("target", ["m\0.duckdb", Path("m\0.duckdb")])
def test_a_nul_in_the_path_is_an_input_error(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="NUL"):
        pcmem.open(target, embedder=None)
    with pytest.raises(InputError, match="NUL"):
        open_backend(target)


# --- item 10: the log is not a file --------------------------------------------------------------------------------


def test_a_log_that_is_a_directory_is_a_typed_refusal(tmp_path):
    path = tmp_path / "m.duckdb"
    pcmem.open(path, embedder=None).close()
    files.wal_path(path).mkdir()
    with pytest.raises(StoreWALError, match=r"is a directory, not a write-ahead log.*mv "):
        pcmem.open(path, embedder=None)
    done = _cli("--db", str(path), "list", "--scope", "s")
    assert done.returncode == 14 and done.stderr.count("\n") == 1, done.stderr


def test_a_log_that_is_a_fifo_is_refused_without_hanging(tmp_path):
    path = tmp_path / "m.duckdb"
    pcmem.open(path, embedder=None).close()
    os.mkfifo(files.wal_path(path))
    for command in (["list", "--scope", "s"], ["remember", "--scope", "s", "x"]):
        done = _cli("--db", str(path), *command, timeout=30)
        assert done.returncode == 14 and "is a pipe, not a write-ahead log" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
