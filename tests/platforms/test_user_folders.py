"""Where the system cannot name the user's folders, pcmem says so in one line (#41: degrade, never crash).

A process with neither ``$HOME`` nor an entry in the password database (``env -i`` under a uid a container made
up) has no home: platformdirs raises RuntimeError for the data and cache folders. The CLI answers with a
ConfigurationError (exit 7) naming what to set; given the folders, it works. Real processes, the password
database's answer replaced inside them (a made-up uid needs root to run as).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: pcmem's CLI in a process whose user the password database does not know.
NO_HOME = r"""
import pwd, sys
def unknown(uid): raise KeyError(f"getpwuid(): uid not found: {uid}")
pwd.getpwuid = unknown
from pcmem.cli import main
sys.argv = ["pcmem", *sys.argv[1:]]
main()
"""


def homeless(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_HOME, *args], capture_output=True, text=True, timeout=600,
                          env=env)


@pytest.mark.parametrize(("args", "said"), [
    (("where",), "cannot tell where your data folder is: this process has no $HOME and the system knows no home "
                 "for its user; set HOME (or give --db or PCMEM_DB)"),
    (("remember", "--scope", "t", "hello"), "cannot tell where your cache folder is: this process has no $HOME and "
                                            "the system knows no home for its user; set HOME (or PCMEM_CACHE_DIR)"),
], ids=["data", "cache"])
def test_no_home_is_one_line_naming_what_to_set(args: tuple[str, ...], said: str, tmp_path: Path) -> None:
    store = () if args == ("where",) else ("--db", str(tmp_path / "m.duckdb"))
    done = homeless(*store, *args)
    assert done.returncode == 7, done.stderr
    assert done.stderr.strip().splitlines() == [f"pcmem: error: {said}"]


def test_given_the_folders_a_process_without_a_home_works(tmp_path: Path) -> None:
    store = tmp_path / "m.duckdb"
    done = homeless("--db", str(store), "remember", "--scope", "t", "hello", PCMEM_CACHE_DIR=str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    assert "hello" in homeless("--db", str(store), "list", "--scope", "t", PCMEM_CACHE_DIR=str(tmp_path)).stdout
