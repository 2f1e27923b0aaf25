"""An eval of the MCP tool list: scripted agent tasks through the MCP SDK client over streamable HTTP (issue 29).

Each task is what an agent is asked to do first — pick up context at the start of a turn, remember, correct a fact
by its key, forget a user, find recent work, page a large scope — done with the tools as their descriptions say.
Every call must succeed and every result must fit a token budget an agent can afford (~4 characters a token). The
error tasks make each error an agent can cause happen, then do what its hint says, with the tools it names, and
check that this works.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

import pcmem  # noqa: E402
from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402
from pcmem.serve.tools import TOOL_NAMES  # noqa: E402

#: What one tool result may cost an agent, in tokens (~4 characters each).
TOKEN_BUDGET = 8_000
LARGE_SCOPE = 1_500
#: How the tools' names end: a word of an error text with one of these endings is taken as a tool name.
TOOL_SUFFIXES = ("_memory", "_entry", "_entries", "_scope", "_scopes", "_context", "_history")


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

    async def fails(self, tool: str, code: str, **arguments: object) -> str:
        """The error text of a call that must fail with ``code``; its hint names only tools that exist."""
        result = await self.client.call_tool(tool, arguments)
        text = result.content[0].text
        assert result.is_error and text.startswith(f"{code} ("), f"{tool}: {text}"
        assert result.structured_content["error"]["code"] == code
        named = {word for word in re.findall(r"[a-z]+(?:_[a-z]+)+", text) if word.endswith(TOOL_SUFFIXES)}
        assert named <= set(TOOL_NAMES), f"{tool}'s hint names tools that do not exist: {named - set(TOOL_NAMES)}"
        return text


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "eval.duckdb"
    runtime = pcmem.open(path, embedder=None)
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
        assert again["entry"] == first["entry"]
        listed = await agent("list_memory_entries", scope_id="user:ana")
        assert [e["text"] for e in listed["entries"]] == ["Ana prefers the Helix editor."]
        assert listed["entries"][0]["metadata"] == {"source": "chat"}


async def test_read_and_write_a_fact_by_its_key(server_url):
    """The key an agent chose names the entry in every call: get, revise, retire, reactivate, history, forget."""
    async with connected(server_url) as agent:
        await agent("remember_memory", scope_id="user:kim", text="Kim lives in Lisbon.", key="city")
        read = await agent("get_memory_entry", scope_id="user:kim", entry_id="city")
        assert (read["entry_id"], read["version"], read["text"]) == ("city", 1, "Kim lives in Lisbon.")
        revised = await agent("revise_memory_entry", scope_id="user:kim", entry_id="city", text="Kim lives in Porto.",
                              expected_version=read["version"], reason="she moved")
        assert revised["entry"]["version"] == 2
        assert (await agent("retire_memory_entry", scope_id="user:kim", entry_id="city"))["entry"]["state"] == \
            "retired"
        assert (await agent("reactivate_memory_entry", scope_id="user:kim", entry_id="city"))["entry"]["state"] == \
            "active"
        history = await agent("entry_history", scope_id="user:kim", entry_id="city")
        assert [(e["operation"], e["version"]) for e in history["events"]] == [
            ("remember", 1), ("revise", 2), ("retire", 2), ("reactivate", 2)]
        assert history["events"][1]["reason"] == "she moved"
        assert (await agent("forget_memory_entry", scope_id="user:kim", entry_id="city"))["erased_entry_ids"] == \
            ["city"]
        erased = await agent("entry_history", scope_id="user:kim", entry_id="city")
        assert erased["state"] == "erased" and erased["erased_in_revision"] == 5
        assert [e["operation"] for e in erased["events"]] == [
            "remember", "revise", "retire", "reactivate", "forget"]
        assert "Porto" not in json.dumps(erased) and "Lisbon" not in json.dumps(erased)
        again = await agent("remember_memory", scope_id="user:kim", text="Kim lives in Faro.", key="city")
        assert again["entry"]["entry_id"] == "city~2", "a forgotten key written again is a new entry"
        assert (await agent("get_memory_entry", scope_id="user:kim", entry_id="city"))["text"] == "Kim lives in Faro."


async def test_correct_a_fact_while_the_scope_moves_on(server_url):
    async with connected(server_url) as agent:
        await agent("remember_memory", scope_id="user:dee", kind="fact", text="Ana lives in Lisbon.", key="city")
        hit = (await agent("search_memory", scope_id="user:dee", query="where does Ana live"))["hits"][0]
        # Other writes to the scope after the agent read the hit do not make its version stale.
        await agent("remember_memory", scope_id="user:dee", kind="fact", text="Ana has a cat named Miso.")
        revised = await agent("revise_memory_entry", scope_id="user:dee", entry_id=hit["entry_id"],
                              text="Ana lives in Porto.", expected_version=hit["version"], reason="she moved")
        assert revised["changed"] and revised["entry"]["version"] == 2
        # The same correction through the key, as a mem0-style agent would do it, changes nothing more.
        again = await agent("remember_memory", scope_id="user:dee", kind="fact", text="Ana lives in Porto.",
                            key="city")
        assert again["changed"] is False


async def test_context_block_at_the_start_of_a_turn_stays_within_its_budget(server_url):
    async with connected(server_url) as agent:
        for key, text in [("editor", "Lee prefers the Helix editor."), ("deploy", "Deploys go out on Tuesdays."),
                          ("lunch", "The team orders pizza on Fridays.")]:
            await agent("remember_memory", scope_id="user:lee", text=text, key=key)
        block = await agent("prepare_context", scope_id="user:lee", query="when do deploys go out?",
                            more_scope_ids=["project:big"], max_bytes=2000, explain=True)
        assert block["bytes"] == len(block["text"].encode()) <= 2000
        assert "[1] user:lee/deploy v1" in block["text"] and block["items"][0]["entry_id"] == "deploy"
        assert {o["reason"] for o in block["omitted"]} <= {"duplicate", "budget"}
        cited = {(i["scope_id"], i["entry_id"]) for i in block["items"]}
        assert len(cited) == len(block["items"]), "each entry once"
        for max_bytes, max_tokens in [(256, None), (600, None), (65536, 200), (8000, None)]:
            budget = {"max_bytes": max_bytes} | ({"max_tokens": max_tokens} if max_tokens else {})
            packed = await agent("prepare_context", scope_id="project:big", query="shared cache layer",
                                 relevant=50, recent=50, **budget)
            assert packed["bytes"] == len(packed["text"].encode()) <= max_bytes
            if max_tokens:
                assert packed["tokens"] <= max_tokens
        start = await agent("prepare_context", scope_id="user:lee")  # no query: the newest entries
        assert [i["entry_id"] for i in start["items"]] == ["lunch", "deploy", "editor"]


async def test_every_error_hint_leads_somewhere(server_url):
    """Each error an agent can cause, then what its hint says to do, done with the tools it names."""
    async with connected(server_url) as agent:
        await agent("remember_memory", scope_id="user:err", text="Err likes tea.", key="drink")
        await agent("revise_memory_entry", scope_id="user:err", entry_id="drink", text="Err likes coffee.")
        # revision_conflict on an entry: read it again (get_memory_entry), retry with that expected_version.
        text = await agent.fails("revise_memory_entry", "revision_conflict", scope_id="user:err", entry_id="drink",
                                 text="Err likes mate.", expected_version=1)
        assert '"expected_version": 1, "current_version": 2' in text and "get_memory_entry" in text
        current = await agent("get_memory_entry", scope_id="user:err", entry_id="drink")
        await agent("revise_memory_entry", scope_id="user:err", entry_id="drink", text="Err likes mate.",
                    expected_version=current["version"])
        # revision_conflict on a scope revision: list_memory_entries gives the revision to retry with.
        text = await agent.fails("remember_memory", "revision_conflict", scope_id="user:err", text="Err is 30.",
                                 expected_revision=1)
        assert '"expected_revision": 1, "head_revision": 3' in text and "list_memory_entries" in text
        head = (await agent("list_memory_entries", scope_id="user:err"))["revision"]
        await agent("remember_memory", scope_id="user:err", text="Err is 30.", expected_revision=head)
        # memory_entry_inactive: reactivate_memory_entry brings it back.
        await agent("retire_memory_entry", scope_id="user:err", entry_id="drink")
        text = await agent.fails("revise_memory_entry", "memory_entry_inactive", scope_id="user:err",
                                 entry_id="drink", text="Err likes water.")
        assert "reactivate_memory_entry" in text
        await agent.fails("retire_memory_entry", "memory_entry_inactive", scope_id="user:err", entry_id="drink")
        await agent("reactivate_memory_entry", scope_id="user:err", entry_id="drink")
        await agent.fails("reactivate_memory_entry", "memory_entry_active", scope_id="user:err", entry_id="drink")
        # memory_not_found: list_scopes and list_memory_entries give the names to use.
        text = await agent.fails("get_memory_entry", "memory_not_found", scope_id="user:err", entry_id="food")
        assert "list_scopes" in text and "list_memory_entries" in text
        scopes = {s["scope_id"] for s in (await agent("list_scopes"))["scopes"]}
        assert "user:err" in scopes
        ids = [e["entry_id"] for e in (await agent("list_memory_entries", scope_id="user:err"))["entries"]]
        assert "drink" in ids
        # invalid_request: the message names the field; fixing it works.
        text = await agent.fails("search_memory", "invalid_request", scope_id="user:err", query="tea", limit="5")
        assert "limit" in text
        await agent("search_memory", scope_id="user:err", query="tea", limit=5)
        # capability_not_supported: retry with mode 'auto' (this store has no vectors).
        text = await agent.fails("search_memory", "capability_not_supported", scope_id="user:err", query="tea",
                                 mode="vector")
        assert "'auto'" in text
        await agent("search_memory", scope_id="user:err", query="tea", mode="auto")
        # unknown_tool: the message lists the tools.
        text = await agent.fails("forget_everything", "unknown_tool")
        assert all(name in text for name in TOOL_NAMES)
        # forget_memory_scope's confirmation: invalid_request names it.
        assert "confirm_scope_id" in await agent.fails("forget_memory_scope", "invalid_request", scope_id="user:err",
                                                       confirm_scope_id="user:other")


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
        assert again["entry"]["entry_id"] != written["entry"]["entry_id"]
        old = await agent.client.call_tool("get_memory_entry", {"scope_id": "user:ben",
                                                                "citation": written["entry"]["citation"]})
        assert old.is_error and old.content[0].text.startswith("memory_not_found")


async def test_find_recent_work_across_scopes_at_session_start(server_url):
    async with connected(server_url) as agent:
        await agent("remember_memory", scope_id="project:web", kind="decision", text="We chose Postgres 16.")
        await agent("remember_memory", scope_id="user:cai", kind="preference", text="Cai wants short answers.")
        scopes = await agent("list_scopes")
        assert {s["scope_id"] for s in scopes["scopes"]} >= {"project:big", "project:web", "user:cai"}
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
            seen += [e["entry_id"] for e in page["entries"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == LARGE_SCOPE // 50 and len(seen) == len(set(seen)) == LARGE_SCOPE
        hits = await agent("search_memory", scope_id="project:big", query="refactored shared cache", limit=50)
        assert len(hits["hits"]) == 50
        assert agent.largest / 4 <= TOKEN_BUDGET
