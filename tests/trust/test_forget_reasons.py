"""``forget`` erases the reasons written with the entry, from what ``changes`` prints and from the file's bytes
(issue #38, item 3): real CLI processes, as a user would run them."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

PCMEM = [sys.executable, "-m", "pcmem"]


def _pcmem(path: Path, *args: str) -> str:
    done = subprocess.run([*PCMEM, "--db", str(path), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _bytes_holding(folder: Path, marker: str) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.is_file() and marker.encode() in path.read_bytes())


@pytest.mark.parametrize("how", ["entry", "all"])
def test_a_forgotten_entry_s_reasons_leave_changes_and_the_file(tmp_path, how):
    old, kept = "ZQX" + secrets.token_hex(8), "KPT" + secrets.token_hex(8)
    path = tmp_path / "m.duckdb"
    _pcmem(path, "remember", "--scope", "a", "--id", "phone", "--reason", f"first number {old}", "phone 555-0100")
    _pcmem(path, "remember", "--scope", "a", "--id", "phone", "--upsert", "--reason", f"old was {old}",
           "phone 555-0199")
    _pcmem(path, "remember", "--scope", "b", "--id", "other", "--reason", f"another scope {kept}", "unrelated")
    assert _bytes_holding(tmp_path, old) != []  # the test sees the reason before the forget
    _pcmem(path, "forget", "--scope", "a", "--yes", *(["--all"] if how == "all" else ["phone"]))
    changes = json.loads(_pcmem(path, "changes", "--scope", "a", "--since", "0", "--json"))
    assert [change["reason"] for change in changes["changes"]] == [None, None, None]
    assert old not in _pcmem(path, "changes", "--scope", "a", "--since", "0")
    assert _bytes_holding(tmp_path, old) == []  # neither the file nor its log
    assert kept in _pcmem(path, "changes", "--scope", "b", "--since", "0")
