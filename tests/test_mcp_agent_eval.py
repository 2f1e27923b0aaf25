"""An eval of the MCP tool list: scripted agent tasks through the MCP SDK client over streamable HTTP (issue 29).

Each task is what an agent is asked to do first — remember, correct a fact, forget a user, find recent work, page a
large scope — done with the tools as their descriptions say. Every call must succeed and every result must fit a
token budget an agent can afford (~4 characters a token).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

import pcmem  # noqa: E402
from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402

#: What one tool result may cost an agent, in tokens (~4 characters each).
TOKEN_BUDGET = 8_000
LARGE_SCOPE = 1_500


class Agent:
    """Calls tools and checks each result: no tool error, within the token budget."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.largest = 0

    async def __call__(self, tool: str, **arguments: object) -> dict:
        result = await self.client.call_tool(tool, arguments)
        text = result.content[0].text
        assert not result.is_error, f"{tool}: {text}"
        self.largest = max(self.largest, len(text))
        assert len(text) / 4 <= TOKEN_BUDGET, f"{tool} answered ~{len(text) // 4} tokens"
        return json.loads(text)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "eval.duckdb"
    runtime = pcmem.open_sync(path, embedder=None)
    runtime.memory.for_scope("project:big").remember(pcmem.RememberRequest(entries=tuple(
        pcmem.NewEntry(text=f"Build note {i}: module m{i % 37} was refactored to use the shared cache layer.",
                       kind="note", entry_id=f"note-{i:04d}") for i in range(LARGE_SCOPE))))
    api = MemoryApi(runtime, path)
    try:
        with LiveServer(create_app(api, ServeOptions())) as server:
            yield server.url
    finally:
        api.close()
        runtime.close()


@contextlib.asynccontextmanager
async def connected(url: str) -> AsyncIterator[Agent]:
    async with Client(streamable_http_client(f"{url}/mcp")) as client:
        yield Agent(client)


async def test_remember_is_safe_to_retry_with_a_key(server_url):
    async with connected(server_url) as agent:
        call = {"scope_id": "user:ana", "kind": "preference", "text": "Ana prefers the Helix editor.",
                "key": "editor", "metadata": {"source": "chat"}}
        first = await agent("remember_memory", **call)
        again = await agent("remember_memory", **call)  # a retried call
        assert first["changed"] is True and again["changed"] is False
        assert again["entry"]["citation"] == first["entry"]["citation"]
        listed = await agent("list_memory_entries", scope_id="user:ana")
        assert [e["text"] for e in listed["entries"]] == ["Ana prefers the Helix editor."]
        assert listed["entries"][0]["metadata"] == {"source": "chat"}


async def test_correct_a_fact_while_the_scope_moves_on(server_url):
    async with connected(server_url) as agent:
        await agent("remember_memory", scope_id="user:dee", kind="fact", text="Ana lives in Lisbon.", key="city")
        hit = (await agent("search_memory", scope_id="user:dee", query="where does Ana live"))["hits"][0]
        # Other writes to the scope after the agent read the hit do not invalidate its citation.
        await agent("remember_memory", scope_id="user:dee", kind="fact", text="Ana has a cat named Miso.")
        revised = await agent("revise_memory_entry", scope_id="user:dee", citation=hit["citation"],
                              text="Ana lives in Porto.", reason="she moved")
        assert revised["changed"] and revised["entry"]["version"] == 2
        # The same correction through the key, as a mem0-style agent would do it, changes nothing more.
        # (the revise's reason lives with its revision, not in the entry's metadata)
        again = await agent("remember_memory", scope_id="user:dee", kind="fact", text="Ana lives in Porto.",
                            key="city")
        assert again["changed"] is False
        # Retire with an explicit per-entry version, then bring it back.
        retired = await agent("retire_memory_entry", scope_id="user:dee", citation=revised["entry"]["citation"],
                              expected_version=2)
        assert retired["entry"]["state"] == "retired"
        back = await agent("reactivate_memory_entry", scope_id="user:dee", citation=retired["entry"]["citation"],
                           expected_version=2)
        assert back["entry"]["state"] == "active"


async def test_forget_a_user_then_a_returning_user_starts_fresh(server_url):
    async with connected(server_url) as agent:
        written = await agent("remember_memory", scope_id="user:ben", kind="fact", text="Ben's phone is 555-0101.",
                              key="phone")
        await agent("remember_memory", scope_id="user:ben", kind="fact", text="Ben works at Initech.", key="job")
        one = await agent("forget_memory_entry", scope_id="user:ben", entry_id="phone")
        assert one["erased_entry_ids"] == ["phone"]
        everything = await agent("forget_memory_scope", scope_id="user:ben", confirm_scope_id="user:ben")
        assert everything["erased_entry_ids"] == ["job"]
        assert (await agent("search_memory", scope_id="user:ben", query="phone Initech"))["hits"] == []
        # The user comes back: the same key is a new entry, and the old citation still reads nothing.
        again = await agent("remember_memory", scope_id="user:ben", kind="fact", text="Ben's phone is 555-0199.",
                            key="phone")
        assert again["changed"] and again["entry"]["text"] == "Ben's phone is 555-0199."
        assert again["entry"]["citation"]["entry_id"] != written["entry"]["citation"]["entry_id"]
        old = await agent.client.call_tool("get_memory_entry", {"scope_id": "user:ben",
                                                                "citation": written["entry"]["citation"]})
        assert old.is_error and old.content[0].text.startswith("memory_not_found")


async def test_find_recent_work_across_scopes_at_session_start(server_url):
    async with connected(server_url) as agent:
        await agent("remember_memory", scope_id="project:web", kind="decision", text="We chose Postgres 16.")
        await agent("remember_memory", scope_id="user:cai", kind="preference", text="Cai wants short answers.")
        scopes = await agent("list_scopes")
        assert {s["scope"] for s in scopes["items"]} >= {"project:big", "project:web", "user:cai"}
        recent = await agent("list_recent_memory", scope_ids=["project:web", "user:cai", "project:big"], limit=3)
        assert [e["text"] for e in recent["entries"][:2]] == ["Cai wants short answers.", "We chose Postgres 16."]
        found = await agent("search_memory", scope_id="project:web", more_scope_ids=["user:cai"], query="Postgres",
                            kinds=["decision"])
        assert [(h["scope_id"], h["text"]) for h in found["hits"]] == [("project:web", "We chose Postgres 16.")]


async def test_page_a_large_scope(server_url):
    async with connected(server_url) as agent:
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await agent("list_memory_entries", scope_id="project:big",
                               **({"cursor": cursor} if cursor else {}))
            pages += 1
            seen += [e["citation"]["entry_id"] for e in page["entries"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == LARGE_SCOPE // 50 and len(seen) == len(set(seen)) == LARGE_SCOPE
        hits = await agent("search_memory", scope_id="project:big", query="refactored shared cache", limit=50)
        assert len(hits["hits"]) == 50
        assert agent.largest / 4 <= TOKEN_BUDGET
