"""A search through a client of the store's owner is one call to the owner (#46 item 4).

An agent host (`pcmem mcp`) that is a client of the process holding the store used to ask the owner once for the
search and once more per hit (the version and date its tool result shows): 11 round trips for 10 hits, 12x the
search's own time through a second host. A hit now carries its version and date. Real processes: the owner is an app
in a subprocess; this process is its client, and runs the MCP tool in-process over that client runtime.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import pcmem  # noqa: E402
from pcmem.owner import client as owner_client  # noqa: E402
from pcmem.serve.mcp_tools import call  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402
from pcmem.serve.tool_results import entry_json  # noqa: E402

OWNER_APP = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    scope = runtime.memory.for_scope("agent")
    for n in range(10):
        scope.remember(pcmem.NewEntry(text=f"kiwi note {n} about the orchard", entry_id=f"k{n}",
                                      metadata={"n": n}))
    scope.revise(pcmem.ReviseRequest(entry_id="k3", text="kiwi note 3, revised, about the orchard",
                                     expected_version=1))
    print("ready", type(runtime).__name__, flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def owner(tmp_path, monkeypatch):
    run = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))  # a short runtime folder: the owner's socket lives there
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    monkeypatch.setenv("PCMEM_LOCK_TIMEOUT", "5")
    path = tmp_path / "owned.duckdb"
    process = subprocess.Popen([sys.executable, "-c", OWNER_APP, str(path)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    assert line.startswith("ready Sync"), process.stderr.read() if process.stderr else line
    yield path
    process.communicate(timeout=60)
    shutil.rmtree(run, ignore_errors=True)


def test_an_mcp_search_through_a_client_is_one_call_to_the_owner(owner, monkeypatch):
    sent: list[str] = []
    original = owner_client.Caller.call

    def counted(self, key, scope, args, kwargs):  # noqa: ANN001, ANN202 - records each call, then makes it
        sent.append(key)
        return original(self, key, scope, args, kwargs)

    monkeypatch.setattr(owner_client.Caller, "call", counted)
    with pcmem.open(owner, embedder=None) as runtime:
        assert type(runtime).__name__ != "SyncRuntime", "this process must be the owner's client"
        sent.clear()  # what opening asked (the owner checks a client's settings then), not the search
        result = asyncio.run(call(MemoryApi(runtime, owner), "search_memory",
                                  {"scope_id": "agent", "query": "kiwi orchard", "limit": 10}))
        assert not result.is_error, result.content[0].text
        hits = json.loads(result.content[0].text)["hits"]
        assert sent == ["scope.search"]
        assert len(hits) == 10
        scoped = runtime.memory.for_scope("agent")
        for hit in hits:  # what the tool showed is what reading each hit's citation gives
            read = entry_json("agent", scoped.get(pcmem.Citation.parse(hit["citation"])))
            assert {key: value for key, value in hit.items() if key not in ("score", "matched_by")} == read
        assert any(hit["entry_id"] == "k3" and hit["version"] == 2 for hit in hits)


def test_a_hit_carries_its_version_and_date(tmp_path):
    with pcmem.open(tmp_path / "local.duckdb", embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        scope.remember(pcmem.NewEntry(text="the kiwi orchard opens in May", entry_id="k"))
        scope.revise(pcmem.ReviseRequest(entry_id="k", text="the kiwi orchard opens in June", expected_version=1))
        (hit,) = scope.search(pcmem.SearchMemoryRequest(query="kiwi orchard", mode="fts")).hits
        entry = scope.get(hit.citation)
    assert (hit.version, hit.created_at) == (2, entry.entry.created_at) == (entry.entry.version,
                                                                             entry.entry.created_at)


def test_a_v1_search_shows_each_hit_without_reading_it_back(tmp_path, monkeypatch):
    """`pcmem serve`'s PowerContext v1 search read every hit back (one DuckDB read each, ~2.5 ms, or one round
    trip each when serve is a client); the record and the tag filter now come from the hit."""
    from pcmem.memory.scoped_reads import ScopedReads
    from pcmem.serve import convert, wire

    with pcmem.open(tmp_path / "v1.duckdb", embedder=None) as runtime:
        scope = runtime.memory.for_scope("agent")
        for n in range(6):
            scope.remember(pcmem.NewEntry(text=f"kiwi note {n} about the orchard", entry_id=f"k{n}",
                                          metadata={"tags": ["Fruit"] if n % 2 else ["tree"]}))
        scope.revise(pcmem.ReviseRequest(entry_id="k1", text="kiwi note 1, revised, about the orchard",
                                         expected_version=1))
        api = MemoryApi(runtime, tmp_path / "v1.duckdb")
        reads: list[object] = []
        original = ScopedReads.get
        monkeypatch.setattr(ScopedReads, "get", lambda self, citation: reads.append(citation) or original(
            self, citation))
        request = wire.SearchMemoryRequest(scope_id="agent", query="kiwi orchard", mode="fts",
                                           tag_filter=wire.TagFilter(tags=["fruit"]))
        found = asyncio.run(api.search_memory(request))
        assert reads == []
        monkeypatch.setattr(ScopedReads, "get", original)
        page = scope.search(pcmem.SearchMemoryRequest(query="kiwi orchard", mode="fts"))
        expected = [convert.record(scope.get(hit.citation)) for hit in page.hits
                    if convert.tags_match(scope.get(hit.citation), request.tag_filter)]
    assert [hit.memory for hit in found.hits] == expected
    assert sorted(hit.memory.artifact.artifact_id for hit in found.hits) == ["k1", "k3", "k5"]
    assert any(hit.memory.artifact.revision == 2 for hit in found.hits)  # k1's version 2


def test_the_owner_answers_with_its_result_encoded_once_as_the_same_json(tmp_path):
    """The owner sends a result as pydantic's ``dump_json`` writes it, not through Python values and ``json.dumps``
    (~7x the time, on every call it serves); the frame is the same JSON, and a client reads back the same value."""
    import socket

    from pcmem.compose.owned import Rerankers
    from pcmem.owner import protocol
    from pcmem.owner.operations import Dispatcher, operation

    with pcmem.open(tmp_path / "frames.duckdb", embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        scope.remember(pcmem.NewEntry(text="Die Kiwi-Ernte beginnt im Mai — 收获 🥝", metadata={"n": 1.5}))
        request = {"op": "scope.search", "scope": "s", "rerank": None,
                   "args": {"request": {"query": "kiwi", "mode": "fts"}}}
        answer = Dispatcher(runtime.memory, Rerankers())(request)
        assert isinstance(answer["result"], protocol.Encoded)
        page = scope.search(pcmem.SearchMemoryRequest(query="kiwi", mode="fts"))
    sent, received = socket.socketpair()
    with sent, received:
        protocol.send_frame(sent, answer)
        frame = protocol.recv_frame(received)
    result = operation("scope.search").result
    assert frame["result"] == result.dump_python(page, mode="json")
    assert result.validate_python(frame["result"]) == page
