"""Two `pcmem mcp` hosts on one store (#28), as Claude Desktop and Cursor each start one on the per-user store:
both run, and each sees the other's writes on its next call (the first to open the file serves the second)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402


def _payload(result) -> dict:  # noqa: ANN001
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def test_two_mcp_hosts_share_one_store(tmp_path):
    run = tempfile.mkdtemp(prefix="pcm", dir="/tmp")  # a short private runtime folder for the owner's socket
    env = {**os.environ, "PCMEM_DB": str(tmp_path / "agent.duckdb"), "XDG_RUNTIME_DIR": run,
           "PCMEM_LOCK_TIMEOUT": "5"}
    host = StdioServerParameters(command=sys.executable, args=["-m", "pcmem", "mcp"], env=env)
    try:
        async with Client(host) as first, Client(host) as second:
            written = _payload(await first.call_tool("remember_memory", {
                "scope_id": "agent", "kind": "preference", "text": "The user prefers the Helix editor."}))
            listed = _payload(await second.call_tool("list_memory_entries", {"scope_id": "agent"}))
            assert listed["entries"] == [written["entry"]]
            _payload(await second.call_tool("remember_memory", {
                "scope_id": "agent", "kind": "fact", "text": "The build runs on Fridays."}))
            hits = _payload(await first.call_tool("search_memory", {"scope_id": "agent", "query": "build day"}))
            assert "The build runs on Fridays." in [hit["text"] for hit in hits["hits"]]
            hits = _payload(await second.call_tool("search_memory", {"scope_id": "agent", "query": "editor"}))
            assert hits["hits"][0]["text"] == "The user prefers the Helix editor."
            scopes = _payload(await second.call_tool("list_scopes", {}))["scopes"]
            assert [(s["scope_id"], s["revision"]) for s in scopes] == [("agent", 2)]
            # The new library reads reach the owner too: a context block and recent entries, from the second host.
            block = _payload(await second.call_tool("prepare_context", {"scope_id": "agent", "query": "editor"}))
            assert "Helix" in block["text"] and block["bytes"] <= 8000
            recent = _payload(await second.call_tool("list_recent_memory", {"scope_ids": ["agent"]}))
            assert [e["text"] for e in recent["entries"]][0] == "The build runs on Fridays."
    finally:
        shutil.rmtree(run, ignore_errors=True)
