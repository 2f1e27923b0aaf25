"""`pcmem mcp` launched as a subprocess and driven by the MCP SDK's stdio client; the same tools at /mcp on serve.

The subprocess opens a real store with the bundled embedder, as an MCP host would (env PCMEM_DB, as in the README).
"""

from __future__ import annotations

import json
import os
import sys

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

import pcmem  # noqa: E402
from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.mcp_tools import TOOL_NAMES  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402

TOKEN = "mcp-test-token-0123456789abcdef"


def _payload(result) -> dict:  # noqa: ANN001
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def _leaves(error: BaseException, kind: type) -> list[BaseException]:
    """The exceptions of type ``kind`` in ``error`` or in the exception groups it nests."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner, kind)]
    found = [error] if isinstance(error, kind) else []
    return found + (_leaves(error.__context__, kind) if error.__context__ is not None else [])


def _stdio(db_path) -> StdioServerParameters:  # noqa: ANN001
    return StdioServerParameters(command=sys.executable, args=["-m", "pcmem", "mcp"],
                                 env={**os.environ, "PCMEM_DB": str(db_path)})


async def test_stdio_tools_round_trip_and_error_mapping(tmp_path):
    async with Client(_stdio(tmp_path / "agent.duckdb")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == set(TOOL_NAMES) == {
            "prepare_context", "search_memory", "remember_memory", "list_memory_entries", "get_memory_entry",
            "revise_memory_entry", "retire_memory_entry", "reactivate_memory_entry", "forget_memory_entry",
            "forget_memory_scope", "list_recent_memory", "list_scopes", "entry_history"}
        search_schema = tools["search_memory"].input_schema
        assert search_schema["required"] == ["scope_id", "query"] and search_schema["additionalProperties"] is False
        assert tools["search_memory"].annotations.read_only_hint is True
        assert tools["remember_memory"].annotations.read_only_hint is False

        query = {"scope_id": "agent", "query": "which editor does the user prefer?"}
        assert _payload(await client.call_tool("search_memory", query))["hits"] == []
        written = _payload(await client.call_tool("remember_memory", {
            "scope_id": "agent", "kind": "preference", "text": "The user prefers the Helix editor."}))
        hits = _payload(await client.call_tool("search_memory", query))["hits"]
        assert [hit["text"] for hit in hits] == ["The user prefers the Helix editor."], "search sees its own write"
        entry_id = hits[0]["entry_id"]
        assert hits[0]["citation"] == written["entry"]["citation"] and hits[0]["version"] == 1
        assert set(hits[0]) == set(written["entry"]) | {"score", "matched_by"}, "a hit is an entry with a score"

        listed = _payload(await client.call_tool("list_memory_entries", {"scope_id": "agent"}))
        assert listed["revision"] == 1 and [e["entry_id"] for e in listed["entries"]] == [entry_id]
        assert listed["entries"][0] == written["entry"], "one entry shape everywhere"
        got = _payload(await client.call_tool("get_memory_entry", {"scope_id": "agent", "entry_id": entry_id}))
        assert got == written["entry"]
        revised = _payload(await client.call_tool("revise_memory_entry", {
            "scope_id": "agent", "entry_id": entry_id, "text": "The user prefers Neovim.", "expected_version": 1}))
        assert revised["entry"]["version"] == 2 and revised["entry"]["kind"] == "preference"
        old = _payload(await client.call_tool("get_memory_entry", {"scope_id": "agent",
                                                                   "citation": written["entry"]["citation"]}))
        assert old["text"] == "The user prefers the Helix editor.", "a citation reads that exact version"
        scopes = _payload(await client.call_tool("list_scopes", {}))["scopes"]
        assert [(s["scope_id"], s["revision"], s["active"]) for s in scopes] == [("agent", 2, 1)]
        history = _payload(await client.call_tool("entry_history", {"scope_id": "agent", "entry_id": entry_id}))
        assert [e["text"] for e in history["events"]] == [
            "The user prefers the Helix editor.", "The user prefers Neovim."]

        stale = await client.call_tool("retire_memory_entry", {"scope_id": "agent", "entry_id": entry_id,
                                                                "expected_version": 1})
        assert stale.is_error and stale.structured_content["error"]["code"] == "revision_conflict"
        text = stale.content[0].text
        assert text.startswith("revision_conflict (409)") and "get_memory_entry" in text
        assert 'details: {"expected_version": 1, "current_version": 2}.' in text, "JSON, named for what they count"
        retired = _payload(await client.call_tool("retire_memory_entry", {
            "scope_id": "agent", "entry_id": entry_id, "expected_version": 2, "reason": "switched editors"}))
        assert retired["entry"]["state"] == "retired"
        again = await client.call_tool("retire_memory_entry", {"scope_id": "agent", "entry_id": entry_id})
        assert again.is_error and again.content[0].text.startswith("memory_entry_inactive (409)")
        assert "reactivate_memory_entry" in again.content[0].text

        missing = await client.call_tool("get_memory_entry", {"scope_id": "nobody", "entry_id": entry_id})
        assert missing.is_error and missing.content[0].text.startswith("memory_not_found (404)")
        invalid = await client.call_tool("search_memory", {"scope_id": "agent", "query": "", "bogus": 1})
        assert invalid.is_error and invalid.content[0].text.startswith("invalid_request (422)")
        assert "bogus" in invalid.content[0].text and "query" in invalid.content[0].text
        unknown = await client.call_tool("forget_everything", {})
        assert unknown.is_error and "unknown_tool" in unknown.content[0].text


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("search_memory", {"query": "x", "limit": "5"}, "limit"),
    ("search_memory", {"query": "x", "limit": 5.0}, "limit"),
    ("search_memory", {"query": "x", "limit": True}, "limit"),
    ("list_memory_entries", {"include_inactive": 1}, "include_inactive"),
    ("list_memory_entries", {"include_inactive": "true"}, "include_inactive"),
    ("revise_memory_entry", {"entry_id": "k", "text": "t", "expected_version": True}, "expected_version"),
    ("revise_memory_entry", {"entry_id": "k", "text": "t", "expected_version": "1"}, "expected_version"),
    ("remember_memory", {"text": "t", "expected_revision": "1"}, "expected_revision"),
    ("remember_memory", {"text": "t", "metadata": "{}"}, "metadata"),
    ("prepare_context", {"query": "x", "max_bytes": "900"}, "max_bytes"),
])
async def test_tools_refuse_what_the_library_refuses(tmp_path, tool, arguments, field):
    """One rule for every surface: a tool refuses a value the library's validators refuse (no coercion)."""
    from pcmem.serve.mcp_tools import call

    runtime = pcmem.open(tmp_path / "strict.duckdb", embedder=None)
    api = MemoryApi(runtime, tmp_path / "strict.duckdb")
    try:
        result = await call(api, tool, {"scope_id": "s", **arguments})
        assert result.is_error and result.content[0].text.startswith("invalid_request (422)"), result.content[0].text
        assert field in result.content[0].text
    finally:
        api.close()
        runtime.close()


async def test_without_the_token_an_mcp_client_is_told_what_to_send(tmp_path):
    """The SDK shows a 401's JSON-RPC error message (any other body reads "Server returned an error response")."""
    from mcp.shared.exceptions import MCPError

    runtime = pcmem.open(tmp_path / "guarded.duckdb", embedder=None)
    api = MemoryApi(runtime, tmp_path / "guarded.duckdb")
    try:
        with LiveServer(create_app(api, ServeOptions(token=TOKEN))) as server:
            with pytest.raises(BaseException) as refused:  # noqa: PT011 - the SDK raises it inside an ExceptionGroup
                async with Client(streamable_http_client(f"{server.url}/mcp")) as client:
                    await client.list_tools()
            [error] = _leaves(refused.value, MCPError)[:1]
            assert "Authorization: Bearer TOKEN" in str(error) and "--token-file" in str(error)
    finally:
        api.close()
        runtime.close()


def test_mcp_json_lists_the_tools(tmp_path):
    from click.testing import CliRunner

    from pcmem.cli import main

    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.duckdb"), "mcp", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tools"] == list(TOOL_NAMES)


async def test_the_same_tools_over_streamable_http_with_a_token(tmp_path):
    runtime = pcmem.open(tmp_path / "http.duckdb", embedder=None)
    api = MemoryApi(runtime, tmp_path / "http.duckdb")
    try:
        with LiveServer(create_app(api, ServeOptions(token=TOKEN))) as server:
            async with httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
                async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
                    assert {tool.name for tool in (await client.list_tools()).tools} == set(TOOL_NAMES)
                    _payload(await client.call_tool("remember_memory", {
                        "scope_id": "web", "kind": "fact", "text": "MCP over HTTP reaches the same store."}))
                    hits = _payload(await client.call_tool("search_memory", {"scope_id": "web", "query": "store"}))
                    assert len(hits["hits"]) == 1
            # The HTTP API sees what the MCP tool wrote: one runtime behind both.
            with httpx2.Client(base_url=server.url, headers={"authorization": f"Bearer {TOKEN}"}) as http:
                listed = http.post("/v1/memory/entries/list", json={"scope_id": "web"}).json()
                assert [e["text"] for e in listed["entries"]] == ["MCP over HTTP reaches the same store."]
    finally:
        api.close()
        runtime.close()


async def test_remember_without_a_kind_remembers_a_fact(tmp_path):
    """An agent that leaves out the kind must not get a 422 (seen with two hosts on one store): it is a fact."""
    async with Client(_stdio(tmp_path / "kind.duckdb")) as client:
        written = _payload(await client.call_tool("remember_memory", {"scope_id": "s", "text": "no kind given"}))
        assert written["entry"]["kind"] == "fact"
