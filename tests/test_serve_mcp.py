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


def _stdio(db_path) -> StdioServerParameters:  # noqa: ANN001
    return StdioServerParameters(command=sys.executable, args=["-m", "pcmem", "mcp"],
                                 env={**os.environ, "PCMEM_DB": str(db_path)})


async def test_stdio_tools_round_trip_and_error_mapping(tmp_path):
    async with Client(_stdio(tmp_path / "agent.duckdb")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == set(TOOL_NAMES) == {
            "search_memory", "remember_memory", "list_memory_entries", "get_memory_entry", "revise_memory_entry",
            "retire_memory_entry", "reactivate_memory_entry", "forget_memory_entry", "forget_memory_scope",
            "list_recent_memory", "list_scopes", "entry_history"}
        search_schema = tools["search_memory"].input_schema
        assert search_schema["required"] == ["scope_id", "query"] and search_schema["additionalProperties"] is False
        assert "description" in search_schema["properties"]["query"]
        assert tools["search_memory"].annotations.read_only_hint is True
        assert tools["remember_memory"].annotations.read_only_hint is False

        query = {"scope_id": "agent", "query": "which editor does the user prefer?"}
        assert _payload(await client.call_tool("search_memory", query))["hits"] == []
        written = _payload(await client.call_tool("remember_memory", {
            "scope_id": "agent", "kind": "preference", "text": "The user prefers the Helix editor."}))
        hits = _payload(await client.call_tool("search_memory", query))["hits"]
        assert [hit["text"] for hit in hits] == ["The user prefers the Helix editor."], "search sees its own write"
        citation = hits[0]["citation"]
        assert citation == written["entry"]["citation"]

        listed = _payload(await client.call_tool("list_memory_entries", {"scope_id": "agent"}))
        assert [e["citation"] for e in listed["entries"]] == [citation]
        got = _payload(await client.call_tool("get_memory_entry", {"scope_id": "agent", "citation": citation}))
        assert got["kind"] == "preference"
        revised = _payload(await client.call_tool("revise_memory_entry", {
            "scope_id": "agent", "citation": citation, "kind": "preference", "text": "The user prefers Neovim."}))
        assert revised["memory"]["revision"] == 2
        scopes = _payload(await client.call_tool("list_scopes", {}))["items"]
        assert [(s["scope"], s["head_revision"]) for s in scopes] == [("agent", 2)]
        history = _payload(await client.call_tool("entry_history", {"scope_id": "agent",
                                                                    "entry_id": citation["entry_id"]}))
        assert [e["entry"]["text"] for e in history["events"]] == [
            "The user prefers the Helix editor.", "The user prefers Neovim."]

        stale = await client.call_tool("retire_memory_entry", {"scope_id": "agent", "citation": citation})
        assert stale.is_error
        text = stale.content[0].text
        assert text.startswith("revision_conflict (409)") and "list_memory_entries" in text and "expected_version" in text
        stale_version = await client.call_tool("retire_memory_entry", {"scope_id": "agent", "citation": citation,
                                                                       "expected_version": 1})
        assert stale_version.is_error and "expected version 1" in stale_version.content[0].text
        assert stale.structured_content["error"]["code"] == "revision_conflict"
        retired = _payload(await client.call_tool("retire_memory_entry", {
            "scope_id": "agent", "citation": revised["entry"]["citation"], "reason": "switched editors"}))
        assert retired["entry"]["state"] == "retired"

        missing = await client.call_tool("get_memory_entry", {"scope_id": "nobody", "citation": citation})
        assert missing.is_error and missing.content[0].text.startswith("memory_not_found (404)")
        invalid = await client.call_tool("search_memory", {"scope_id": "agent", "query": "", "bogus": 1})
        assert invalid.is_error and invalid.content[0].text.startswith("invalid_request (422)")
        assert "bogus" in invalid.content[0].text and "query" in invalid.content[0].text
        unknown = await client.call_tool("forget_everything", {})
        assert unknown.is_error and "unknown_tool" in unknown.content[0].text


def test_mcp_json_lists_the_tools(tmp_path):
    from click.testing import CliRunner

    from pcmem.cli import main

    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.duckdb"), "mcp", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tools"] == list(TOOL_NAMES)


async def test_the_same_tools_over_streamable_http_with_a_token(tmp_path):
    runtime = pcmem.open_sync(tmp_path / "http.duckdb", embedder=None)
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
