"""No other local user can ever hold a handle on a file pcmem creates (issue #38, item 1).

DuckDB creates its database file with the umask's mode; pcmem used to chmod it to 0600 afterwards, and another user
polling the path opened it in between (6 of 6 CLI remembers, read-write under umask 000) and read the finished
store through that handle. Here a real second user polls the folder while the CLI, the library and ``migrate``
create stores, under the usual umask and under umask 000.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from other_user import Probe, shared_folder

PCMEM = [sys.executable, "-m", "pcmem"]
LIBRARY_WRITE = ("import sys, pcmem\n"
                 "with pcmem.open(sys.argv[1], embedder=None) as runtime:\n"
                 "    runtime.memory.for_scope('s').remember('a secret written through the library')\n")


def _run(command: list[str], umask: int) -> None:
    done = subprocess.run(command, capture_output=True, text=True, umask=umask, timeout=120)
    assert done.returncode == 0, done.stderr


def _modes(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): oct(stat.S_IMODE(path.lstat().st_mode)) for path in folder.rglob("*")}


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_no_other_user_opens_a_store_the_cli_the_library_or_migrate_creates(umask):
    with shared_folder(0o777 if umask == 0 else 0o755) as folder:
        probe = Probe(folder)
        try:
            _run([*PCMEM, "--db", str(folder / "cli.duckdb"), "remember", "--scope", "s", "a secret from the CLI"],
                 umask)
            _run([sys.executable, "-c", LIBRARY_WRITE, str(folder / "library.duckdb")], umask)
            _run([*PCMEM, "migrate", "--from", str(folder / "cli.duckdb"), "--to", str(folder / "copy.duckdb")],
                 umask)
            _run([*PCMEM, "--db", str(folder / "nested" / "deeper" / "store.duckdb"), "remember", "--scope", "s",
                  "a secret in folders pcmem made"], umask)
        finally:
            handles = probe.stop()
        assert handles == {}
        assert _modes(folder) == {
            "cli.duckdb": "0o600", "library.duckdb": "0o600", "copy.duckdb": "0o600",
            "nested": "0o700", "nested/deeper": "0o700", "nested/deeper/store.duckdb": "0o600",
        }


def test_the_chaos_campaign_s_creation_race_finds_no_handle():
    from pcmem_bench import creation_race

    if creation_race.probe_user() is None:
        pytest.skip(f"needs root and a user {creation_race.CAMPAIGN_USER!r}")
    tally = creation_race.trial(rounds=1)
    assert tally.ok and tally.operations == 6 and tally.acknowledged == tally.found == 2, tally.as_dict()


def test_a_store_made_by_another_process_meanwhile_is_opened_not_replaced(tmp_path):
    """Two processes creating one new store: the second one's staged file is not linked over the first's."""
    from pcmem.private_files import create_privately

    target = tmp_path / "race.duckdb"

    def build(staged: Path) -> None:
        staged.write_bytes(b"mine")
        target.write_bytes(b"theirs")  # the other process wins the race while this one builds

    assert create_privately(target, build) is False
    assert target.read_bytes() == b"theirs"
    assert [path.name for path in tmp_path.iterdir()] == ["race.duckdb"]  # no staging folder left behind


def test_a_staging_folder_left_by_a_killed_process_goes_at_the_next_creation(tmp_path):
    from pcmem.private_files import STAGING_SUFFIX, create_privately

    target = tmp_path / "s.duckdb"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    abandoned = tmp_path / f".s.duckdb.{dead.stdout.strip()}.00000000{STAGING_SUFFIX}"
    abandoned.mkdir()
    (abandoned / "s.duckdb").write_bytes(b"half made")
    live = tmp_path / f".s.duckdb.{os.getpid()}.00000000{STAGING_SUFFIX}"  # another thread of this process, busy
    live.mkdir()
    assert create_privately(target, lambda staged: staged.write_bytes(b"new")) is True
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([live.name, "s.duckdb"])
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_the_state_folder_of_the_search_history_is_made_private_under_umask_000(tmp_path):
    """``XDG_STATE_HOME/pcmem`` was made 0755 (0777 under umask 000) by the TUI's search history."""
    state = tmp_path / "state"
    code = ("from pcmem_tui.history import SearchHistory, history_file\n"
            "SearchHistory(history_file('/somewhere/notes.duckdb')).add('what did we decide?')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, umask=0,
                          env={**os.environ, "XDG_STATE_HOME": str(state)})
    assert done.returncode == 0, done.stderr
    assert _modes(state) == {"pcmem": "0o700", "pcmem/search-history": "0o700",
                             **{f"pcmem/search-history/{path.name}": "0o600"
                                for path in (state / "pcmem" / "search-history").iterdir()}}
