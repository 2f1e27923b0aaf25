"""The two hottest paths do each thing once: a CLI search (no owner, or as a client of one) resolves the store once and
looks for its owner once, and an MCP ``remember`` answers with what it wrote without reading it back — counted on the
real calls (:mod:`hot_path_counts`), not on mocks of them."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hot_path_counts import counting

import pcmem
from pcmem.cli import main
from pcmem.serve.operations import MemoryApi
from pcmem.serve.tools import writes

ROOT = Path(__file__).resolve().parents[2]

#: An app that owns the store until its stdin closes.
OWNER = """
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    print("ready", flush=True)
    sys.stdin.read()
"""


def _seeded(tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("We deploy on Fridays.")
    return path


@pytest.mark.parametrize("mode", [("--mode", "fts"), ()], ids=["fts", "auto"])
def test_a_cold_cli_search_resolves_the_store_once_and_looks_for_its_owner_once(tmp_path, monkeypatch, capsys, mode):
    path = _seeded(tmp_path)
    if not mode:  # the store adopts the embedder's profile at its first open with one (a write): not this search's
        main(["--db", str(path), "search", "-s", "s", "--json", "deploy"], standalone_mode=False)
        capsys.readouterr()
    counts = counting(monkeypatch)
    main(["--db", str(path), "search", "-s", "s", *mode, "--json", "deploy"], standalone_mode=False)
    assert "Fridays" in capsys.readouterr().out
    assert counts["path resolutions"] == 1
    assert counts["owner lookups"] == 1  # asked once: the open that follows does not look again
    # The command owns the store while it runs and serves others who arrive meanwhile (about half a millisecond of a
    # cold call: an agent's second call, a TUI, an MCP host starting are answered instead of polling the lock).
    assert counts["listeners"] == 1
    # The store's profile and default fusion come with the open, the search from the memo's snapshot.
    assert counts["read transactions"] == 0 and counts["write transactions"] == 0
    assert counts["frames"] == 0


def test_a_cli_search_beside_an_owner_is_one_round_trip(tmp_path, monkeypatch, capsys):
    path = _seeded(tmp_path)
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        counts = counting(monkeypatch)
        main(["--db", str(path), "search", "-s", "s", "--mode", "fts", "--json", "deploy"], standalone_mode=False)
        page = json.loads(capsys.readouterr().out)
        assert [hit["text"] for hit in page["hits"]] == ["We deploy on Fridays."]
        assert counts["path resolutions"] == 1 and counts["owner lookups"] == 1
        assert counts["frames"] == 2  # the greeting, then the search
        assert counts["listeners"] == 0 and counts["read transactions"] == 0
    finally:
        owner.communicate(input="", timeout=60)


def _remember(api: MemoryApi, text: str, key: str | None = None) -> dict[str, object]:
    args = writes.RememberArgs(scope_id="agent", text=text, key=key)
    return asyncio.run(writes.remember_memory(api, args))


def test_an_mcp_remember_answers_with_what_it_wrote_without_reading_it_back(tmp_path, monkeypatch):
    with pcmem.open(tmp_path / "s.duckdb", embedder=None) as runtime:
        api = MemoryApi(runtime, tmp_path / "s.duckdb")
        try:
            _remember(api, "the first note")  # the scope exists: its head is verified once, before the first write
            counts = counting(monkeypatch)
            answer = _remember(api, "We deploy on Fridays.")
            assert answer["changed"] is True
            entry = answer["entry"]
            assert isinstance(entry, dict) and entry["text"] == "We deploy on Fridays." and entry["state"] == "active"
            assert counts["write transactions"] == 1
            assert counts["read transactions"] == 0 and counts["snapshot reads"] == 0
            written = runtime.memory.for_scope("agent").get(pcmem.Citation.parse(str(entry["citation"])))
            assert written.entry.entry_version_id in str(entry["citation"])
        finally:
            api.close()


def test_an_mcp_remember_of_a_client_is_one_round_trip(tmp_path, monkeypatch):
    path = _seeded(tmp_path)
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        with pcmem.open(path, embedder=None) as runtime:
            assert runtime.owner_pid == owner.pid
            api = MemoryApi(runtime, path)
            try:
                _remember(api, "the first note")  # the client's first call greets the owner
                counts = counting(monkeypatch)
                answer = _remember(api, "We deploy on Fridays.", key="deploys")
                entry = answer["entry"]
                assert isinstance(entry, dict) and entry["text"] == "We deploy on Fridays."
                assert counts["frames"] == 1  # the write: its answer carries the entry
                assert counts["path resolutions"] == 0 and counts["owner lookups"] == 0
            finally:
                api.close()
    finally:
        owner.communicate(input="", timeout=60)


def test_a_resent_write_answers_with_the_entries_it_wrote_the_first_time(tmp_path):
    """A write sent again with its idempotency key is answered with its first outcome, entries included (read back by
    their immutable ids: a record keeps no text)."""
    with pcmem.open(tmp_path / "s.duckdb", embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        first = scope.remember("We deploy on Fridays.", idempotency_key="k1")
        entry_id = first.citations[0].entry_id
        revised = scope.revise(entry_id, text="We deploy on Mondays.", expected_revision=first.memory.revision)
        again = scope.remember("We deploy on Fridays.", idempotency_key="k1")
        assert again == first and [entry.entry.text for entry in again.entries] == ["We deploy on Fridays."]
        retired = scope.retire(entry_id, expected_revision=revised.memory.revision, idempotency_key="k2")
        assert scope.retire(entry_id, expected_revision=revised.memory.revision, idempotency_key="k2") == retired
        assert [entry.state for entry in retired.entries] == ["retired"]
