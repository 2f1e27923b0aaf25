"""One definition of "a copy of this store's log" (issue #38, item 6c): ``pcmem check`` lists every one (count, bytes,
what to do) and ``forget`` erases every one — also those a user named otherwise when moving a log aside by hand,
which forget used to miss. Real CLI processes."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

PCMEM = [sys.executable, "-m", "pcmem"]


def _pcmem(path: Path, *args: str, code: int = 0) -> str:
    done = subprocess.run([*PCMEM, "--db", str(path), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    return done.stdout


def _store_with_copies(tmp_path: Path, marker: str) -> tuple[Path, list[Path]]:
    path = tmp_path / "m.duckdb"
    _pcmem(path, "remember", "--scope", "s", "--id", "secret", f"the code is {marker}")
    _pcmem(path, "remember", "--scope", "s", "--id", "kept", "an entry that stays")
    copies = [tmp_path / f"m.duckdb.wal.{suffix}" for suffix in ("damaged", "damaged.1", "aside", "damaged-2", "bak")]
    for number, copy in enumerate(copies):
        copy.write_bytes(b"\x00" * 1000 * (number + 1) + f"a log that held {marker}".encode())
    return path, copies


def test_check_lists_every_copy_of_the_log_with_its_size_and_what_to_do(tmp_path):
    path, copies = _store_with_copies(tmp_path, "ZQX" + secrets.token_hex(8))
    (tmp_path / "m.duckdb.wal.folder").mkdir()  # not a copy: folders and symlinks are left alone
    (tmp_path / "m.duckdb.wal.link").symlink_to(tmp_path / "elsewhere")
    report = json.loads(_pcmem(path, "check", "--json"))
    assert report["ok"] and report["log_copies"] == {str(copy): copy.stat().st_size for copy in sorted(copies)}
    text = _pcmem(path, "check")
    assert "5 copies of the write-ahead log next to the store" in text and "delete them" in " ".join(text.split())


def test_forget_erases_every_copy_of_the_log_whatever_its_name(tmp_path):
    marker = "ZQX" + secrets.token_hex(8)
    path, copies = _store_with_copies(tmp_path, marker)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text(f"not pcmem's: {marker}")
    (tmp_path / "m.duckdb.wal.link").symlink_to(outside)
    _pcmem(path, "forget", "--scope", "s", "--yes", "secret")
    assert not any(copy.exists() for copy in copies)
    assert outside.read_text() == f"not pcmem's: {marker}"  # a link is not followed
    holding = sorted(p.name for p in tmp_path.iterdir() if p.is_file() and marker.encode() in p.read_bytes())
    assert holding == ["elsewhere.txt", "m.duckdb.wal.link"]  # the link's target, read through the link
    assert json.loads(_pcmem(path, "check", "--json"))["log_copies"] == {}
