"""Adding an agent tool is one declaration: ``@tool(...)`` on the function that runs it, with its argument model. A
tool declared here, in the test, is listed and called over MCP (a real streamable HTTP session), served at
``POST /x/pcmem/tools/{name}``, validated like the others, and shown by ``pcmem mcp --help`` and ``--json``.
CONTRIBUTING.md shows the same steps."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from pydantic import Field  # noqa: E402

import pcmem  # noqa: E402
from pcmem.cli import main  # noqa: E402
from pcmem.serve import tools  # noqa: E402
from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.mcp_tools import call, tool_list  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402
from pcmem.serve.tool_args import Scoped  # noqa: E402
from pcmem.serve.tool_declaration import Json, tool  # noqa: E402
from pcmem.types.base import Flag  # noqa: E402

NAME = "count_memory_entries"


class CountArgs(Scoped):
    include_inactive: Flag = Field(default=False, description="Also retired entries.")


async def count_memory_entries(api: MemoryApi, args: CountArgs) -> Json:
    scoped = api.scope(args.scope_id)
    page = await api.run(lambda: scoped.list(pcmem.ListRequest(state="all" if args.include_inactive else "active")))
    return {"count": len(page.entries)}


@pytest.fixture
def counting() -> Iterator[None]:
    tool(NAME, "How many entries a scope holds.", returns="{count}", arguments=CountArgs)(count_memory_entries)
    try:
        yield
    finally:
        tools.unregister(NAME)


@pytest.fixture
def api(tmp_path) -> Iterator[MemoryApi]:
    runtime = pcmem.open(tmp_path / "tools.duckdb", embedder=None)
    served = MemoryApi(runtime, tmp_path / "tools.duckdb")
    for text in ("Deploys go out on Fridays.", "Reviews happen on Thursdays."):
        runtime.memory.for_scope("s").remember(text)
    try:
        yield served
    finally:
        served.close()
        runtime.close()


async def test_a_declared_tool_is_listed_and_called_over_mcp_and_http(counting, api):
    listed = {listed.name: listed for listed in tool_list()}[NAME]
    assert listed.description == "How many entries a scope holds. Returns {count}."
    assert listed.input_schema["required"] == ["scope_id"] and listed.annotations.read_only_hint
    with LiveServer(create_app(api, ServeOptions())) as server:
        async with httpx2.AsyncClient(timeout=60) as http:
            async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
                assert NAME in {found.name for found in (await client.list_tools()).tools}
                result = await client.call_tool(NAME, {"scope_id": "s"})
                assert json.loads(result.content[0].text) == {"count": 2}
        with httpx2.Client(base_url=server.url) as http:
            assert http.post(f"/x/pcmem/tools/{NAME}", json={"scope_id": "s"}).json() == {"count": 2}
            refused = http.post(f"/x/pcmem/tools/{NAME}", json={"scope_id": "s", "include_inactive": 1})
            assert refused.status_code == 422  # validated by its model, like every tool: 1 is not a flag


async def test_a_declared_tool_refuses_bad_arguments_as_a_tool_error(counting, api):
    failed = await call(api, NAME, {"scope_id": "s", "extra": True})
    assert failed.is_error and "extra: Extra inputs are not permitted" in failed.content[0].text


def test_the_mcp_command_shows_a_declared_tool(counting, tmp_path):
    shown = CliRunner().invoke(main, ["mcp", "--help"], terminal_width=200).output
    assert f"{NAME}" in shown and "How many entries a scope holds." in shown
    done = CliRunner().invoke(main, ["--db", str(tmp_path / "m.duckdb"), "mcp", "--json"])
    assert json.loads(done.output)["tools"][-1] == NAME


async def test_an_undeclared_tool_is_unknown(api):
    assert NAME not in {listed.name for listed in tool_list()}
    unknown = await call(api, NAME, {"scope_id": "s"})
    assert unknown.is_error and "no tool 'count_memory_entries'" in unknown.content[0].text
    with pytest.raises(pcmem.InputError, match="already declared"):
        tools.register(tools.TOOLS[0])
