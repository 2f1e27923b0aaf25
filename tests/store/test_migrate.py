"""``pcmem migrate``: a store copied to another backend keeps every revision, id, timestamp and vector."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakes import TextHashEmbedder, TickingClock

import pcmem
from pcmem import ListRequest, NewEntry, ReactivateRequest, RememberRequest, RetireRequest, ReviseRequest
from pcmem.cli import main
from pcmem.compose.backends import open_backend
from pcmem.errors import DestinationNotEmptyError
from pcmem.store.migrate import migrate
from pcmem.store.migrate import verify as migrate_verify
from pcmem.types.search import SearchMemoryRequest


def _seed(target) -> dict:
    """Two scopes with every kind of revision; returns what to check the copy against."""
    with pcmem.open(target, embedder=TextHashEmbedder(), clock=TickingClock()) as runtime:
        team = runtime.memory.for_scope("team")
        first = team.remember(RememberRequest(entries=(
            NewEntry(text="We deploy on Fridays.", entry_id="deploy", metadata={"source": "standup"}),
            NewEntry(text="Lea owns the budget.", entry_id="budget"),
            NewEntry(text="Lunch is at noon.", entry_id="lunch"),
        )))
        team.revise(ReviseRequest(entry_id="deploy", expected_revision=1, text="We deploy on Mondays."))
        team.retire(RetireRequest(entry_id="lunch", expected_revision=2))
        team.retire(RetireRequest(entry_id="budget", expected_revision=3))
        team.reactivate(ReactivateRequest(entry_id="budget", expected_revision=4))
        runtime.memory.for_scope("solo").remember(NewEntry(text="A single note.", entry_id="one"))
        return {
            "citation": first.citations[0],
            "manifests": {r: team.list(ListRequest(state="all", revision=r)).entries for r in range(1, 6)},
            "hits": [h.citation for h in team.search(SearchMemoryRequest(query="who owns the budget", mode="hybrid")).hits],
        }


def test_duckdb_store_migrates_to_seekdb_with_every_revision(tmp_path, seekdb_url):
    source = tmp_path / "source.duckdb"
    seeded = _seed(source)
    with _opened(source) as src, _opened(seekdb_url) as dst:
        ticks = []
        report = migrate(src, dst, lambda done, total: ticks.append((done, total)))
    assert report.verified, report.problems
    assert (report.scopes, report.revisions, report.entry_versions, report.vectors) == (2, 6, 5, 5)
    assert ticks[-1] == (6, 6)
    with pcmem.open(seekdb_url, embedder=TextHashEmbedder()) as copy:
        team = copy.memory.for_scope("team")
        assert team.get(seeded["citation"]).entry.text == "We deploy on Fridays."  # an old citation still reads back
        for revision, entries in seeded["manifests"].items():
            assert team.list(ListRequest(state="all", revision=revision)).entries == entries
        assert copy.backend.vector_status("team").complete  # vectors came along: no re-embedding
        page = team.search(SearchMemoryRequest(query="who owns the budget", mode="hybrid"))
        assert [h.citation for h in page.hits] == seeded["hits"]


def test_seekdb_store_migrates_back_to_a_duckdb_file(tmp_path, seekdb_url):
    _seed(seekdb_url)
    with _opened(seekdb_url) as src, _opened(tmp_path / "back.duckdb") as dst:
        report = migrate(src, dst)
        assert report.verified, report.problems
        assert dst.scope_summaries() == src.scope_summaries()


def test_a_non_empty_destination_is_refused_untouched(tmp_path, seekdb_url):
    _seed(tmp_path / "source.duckdb")
    with pcmem.open(seekdb_url, embedder=None) as runtime:
        runtime.memory.for_scope("already").remember("Something is here.")
    with _opened(tmp_path / "source.duckdb") as src, _opened(seekdb_url) as dst:
        with pytest.raises(DestinationNotEmptyError, match="empty store only"):
            migrate(src, dst)
        assert [s.scope for s in dst.scope_summaries()] == ["already"]


def test_cli_migrate_reports_and_refuses_typed(tmp_path, seekdb_url):
    source = tmp_path / "source.duckdb"
    _seed(source)
    runner = CliRunner()
    result = runner.invoke(main, ["migrate", "--from", str(source), "--to", seekdb_url, "--json"], env={"PCMEM_DB": None})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verified"] and (report["scopes"], report["revisions"], report["vectors"]) == (2, 6, 5)
    again = runner.invoke(main, ["migrate", "--from", str(source), "--to", seekdb_url], env={"PCMEM_DB": None})
    assert again.exit_code == 2 and again.stderr.startswith("pcmem: error: the destination already holds 2 scope")
    missing = runner.invoke(main, ["migrate", "--from", str(tmp_path / "nope.duckdb"), "--to", str(tmp_path / "x.duckdb")],
                            env={"PCMEM_DB": None})
    assert missing.exit_code == 4 and "does not exist" in missing.stderr
    assert not (tmp_path / "x.duckdb").exists()


class _opened:
    """A backend as a context manager (the port has close(), not __exit__)."""

    def __init__(self, target) -> None:
        self.backend = open_backend(target)

    def __enter__(self):
        return self.backend

    def __exit__(self, *exc_info) -> None:
        self.backend.close()


def _notes(path, count: int) -> None:
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        for i in range(count):
            memory.remember(NewEntry(entry_id=f"e{i}", text=f"note {i} about the copy"))


def _migrate_cli(*args: str):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "pcmem", "migrate", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_killed_migrate_leaves_no_destination_and_a_rerun_completes(tmp_path):
    """The copy is written under a temporary name and renamed when complete: a migrate killed half-way leaves no file
    at the destination that would open as a (partial) store, and the next run starts over (issue 26)."""
    import signal
    import time

    source, destination = tmp_path / "source.duckdb", tmp_path / "copy.duckdb"
    _notes(source, 40)
    partial = tmp_path / "copy.duckdb.migrate-partial"
    killed = _migrate_cli("--from", str(source), "--to", str(destination), "--json")
    deadline = time.monotonic() + 120
    while not (partial.exists() or destination.exists()) and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=60) == -signal.SIGKILL
    assert not destination.exists(), "a killed migrate left a destination that opens as a store"
    rerun = _migrate_cli("--from", str(source), "--to", str(destination), "--json")
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    report = json.loads(out)
    assert report["verified"] and report["revisions"] == 40 and report["removed_incomplete_copy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.duckdb", "source.duckdb"]
    with _opened(source) as src, _opened(destination) as dst:
        assert migrate_verify(src, dst) == []


def test_an_existing_empty_destination_is_replaced_whole_and_a_full_one_is_left_alone(tmp_path):
    source, empty, full = tmp_path / "source.duckdb", tmp_path / "empty.duckdb", tmp_path / "full.duckdb"
    _notes(source, 3)
    pcmem.open(empty, embedder=None).close()
    _notes(full, 1)
    before = full.read_bytes()
    runner = CliRunner()
    done = runner.invoke(main, ["migrate", "--from", str(source), "--to", str(empty), "--json"], env={"PCMEM_DB": None})
    assert done.exit_code == 0, done.output
    refused = runner.invoke(main, ["migrate", "--from", str(source), "--to", str(full)], env={"PCMEM_DB": None})
    assert refused.exit_code == 2 and "already holds 1 scope" in refused.stderr
    assert full.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.duckdb", "full.duckdb", "source.duckdb"]
    with _opened(source) as src, _opened(empty) as dst:
        assert migrate_verify(src, dst) == []
