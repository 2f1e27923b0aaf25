"""An entry's history says why each revision was written, on every surface alike: the library, a client of the
process that owns the store, the CLI (--json and the table), the HTTP route and the MCP ``entry_history`` tool.

The reason is kept with the revision (``revisions.reason``); ``changes`` and ``revisions`` showed it, history did not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_owner import runtime_dir, start_owner, stop_owner  # noqa: F401 - runtime_dir is an autouse fixture

import pcmem
from pcmem.cli import main

#: (revision, operation, reason) of the entry the tests write: a revision without a reason shows none.
EXPECTED = [(1, "remember", "kick-off"), (2, "revise", "moved"), (3, "retire", None), (4, "reactivate", "back")]
TOKEN = "history-test-token-0123456789abcdef"


def _write(scope) -> None:  # noqa: ANN001 - a sync scoped handle, in-process or a client's
    scope.remember("We deploy on Fridays.", entry_id="deploy", reason="kick-off")
    scope.revise("deploy", text="We deploy on Thursdays.", expected_version=1, reason="moved")
    scope.retire("deploy", expected_version=2)
    scope.reactivate("deploy", expected_revision=3, reason="back")


def _rows(events: list[dict]) -> list[tuple[int, str, str | None]]:
    return [(e["revision"], e["operation"], e["reason"]) for e in events]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "history.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        _write(runtime.memory.for_scope("h"))
    return path


def test_the_library_history_gives_each_revisions_reason(store):
    with pcmem.open(store, embedder=None) as runtime:
        events = runtime.memory.for_scope("h").history("deploy").events
    assert [(e.revision, e.operation, e.reason) for e in events] == EXPECTED


def test_a_client_of_the_owner_gets_the_reasons(tmp_path):
    path = tmp_path / "owned.duckdb"
    owner = start_owner(path)
    try:
        with pcmem.open(path, embedder=None) as runtime:
            assert type(runtime).__name__ == "ClientRuntime"
            scope = runtime.memory.for_scope("h")
            _write(scope)
            events = scope.history("deploy").events
    finally:
        stop_owner(owner)
    assert [(e.revision, e.operation, e.reason) for e in events] == EXPECTED


def test_the_cli_history_shows_the_reasons(store):
    as_json = CliRunner().invoke(main, ["--db", str(store), "history", "--scope", "h", "deploy", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert _rows(json.loads(as_json.output)["events"]) == EXPECTED
    table = CliRunner().invoke(main, ["--db", str(store), "history", "--scope", "h", "deploy"])
    assert table.exit_code == 0, table.output
    assert "reason" in table.output and "moved" in table.output and "kick-off" in table.output


async def test_the_http_route_and_the_mcp_tool_give_the_same_reasons(store):
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from pcmem.serve.app import ServeOptions, create_app
    from pcmem.serve.live import LiveServer
    from pcmem.serve.operations import MemoryApi

    runtime = pcmem.open(store, embedder=None)
    api = MemoryApi(runtime, store)
    try:
        with LiveServer(create_app(api, ServeOptions(token=TOKEN))) as server:
            headers = {"authorization": f"Bearer {TOKEN}"}
            with httpx2.Client(base_url=server.url, headers=headers) as http:
                route = http.post("/x/pcmem/entries/history", json={"scope_id": "h", "entry_id": "deploy"})
                assert route.status_code == 200, route.text
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
                    tool = await client.call_tool("entry_history", {"scope_id": "h", "entry_id": "deploy"})
                    assert not tool.is_error, tool.content[0].text
    finally:
        api.close()
        runtime.close()
    assert _rows(route.json()["events"]) == EXPECTED
    assert _rows(json.loads(tool.content[0].text)["events"]) == EXPECTED


def test_the_cli_writes_take_a_reason_that_history_shows(tmp_path):
    """The CLI's remember, revise, retire and reactivate say why with --reason, as the library, HTTP and MCP writes
    do (a reason too long is refused in one line, nothing written)."""
    path = str(tmp_path / "cli.duckdb")

    def run(*args: str) -> str:
        done = CliRunner().invoke(main, ["--db", path, *args])
        assert done.exit_code == 0, done.output
        return done.output

    run("remember", "--scope", "h", "--id", "deploy", "--reason", "kick-off", "We deploy on Fridays.")
    run("revise", "--scope", "h", "--expected-version", "1", "--reason", "moved", "deploy", "We deploy on Thursdays.")
    run("retire", "--scope", "h", "--expected-version", "2", "deploy")
    run("reactivate", "--scope", "h", "--expected-revision", "3", "--reason", "back", "deploy")
    assert _rows(json.loads(run("history", "--scope", "h", "deploy", "--json"))["events"]) == EXPECTED
    too_long = CliRunner().invoke(main, ["--db", path, "retire", "--scope", "h", "--expected-version", "3",
                                         "--reason", "x" * 600, "deploy"])
    assert too_long.exit_code != 0 and "reason" in too_long.output and "Traceback" not in too_long.output
    assert _rows(json.loads(run("history", "--scope", "h", "deploy", "--json"))["events"]) == EXPECTED
