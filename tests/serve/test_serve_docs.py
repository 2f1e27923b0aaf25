"""The serving examples of the docs, run as written: the MCP host snippet (docs/getting-started/mcp-host.md), the curl
per v1 endpoint and the httpx client (docs/guides/serving.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_pages import blocks

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

import pcmem  # noqa: E402
from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402

SERVING, HOST = "docs/guides/serving.md", "docs/getting-started/mcp-host.md"


def _blocks(language: str, page: str = SERVING) -> list[str]:
    return [block.code for block in blocks(language, page=page)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):  # noqa: ANN001, ANN201
    path = tmp_path_factory.mktemp("docs") / "memory.duckdb"
    runtime = pcmem.open(path, embedder=None)
    api = MemoryApi(runtime, path)
    with LiveServer(create_app(api, ServeOptions())) as live:
        yield live
    api.close()
    runtime.close()


async def test_the_mcp_host_snippet_can_remember_and_search(tmp_path):
    [snippet] = _blocks("json", HOST)
    config = json.loads(snippet)["mcpServers"]["pcmem"]
    assert (config["command"], config["args"], list(config["env"])) == ("pcmem", ["mcp"], ["PCMEM_DB"])
    # What a host does: run `command` from its PATH (this test's environment), with the snippet's env.
    command = shutil.which("pcmem", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    assert command, "the pcmem entry point is installed"
    env = {**os.environ, **config["env"], "PCMEM_DB": str(tmp_path / "host.duckdb")}
    async with Client(StdioServerParameters(command=command, args=config["args"], env=env)) as client:
        written = await client.call_tool("remember_memory", {
            "scope_id": "host", "kind": "fact", "text": "The docs' snippet works in an MCP host."})
        assert not written.is_error, written.content[0].text
        found = await client.call_tool("search_memory", {"scope_id": "host", "query": "docs snippet"})
        assert [hit["text"] for hit in json.loads(found.content[0].text)["hits"]] == [
            "The docs' snippet works in an MCP host."]


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")
def test_the_curl_examples_cover_every_v1_endpoint(server):
    [script] = [block for block in _blocks("bash") if "curl" in block]
    for path in ("search", "remember", "entries/list", "entries/get", "entries/revise", "entries/retire", "changes"):
        assert f"/v1/memory/{path} " in script, path
    assert "/x/pcmem/" not in script, "v1's own records are enough to revise and retire"
    address = server.url.removeprefix("http://")
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script.replace("localhost:8765", address)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    outputs, rest, decoder = [], result.stdout.strip(), json.JSONDecoder()
    while rest:  # curl prints each body without a newline: split the concatenated documents
        document, end = decoder.raw_decode(rest)
        outputs.append(document)
        rest = rest[end:].strip()
    assert len(outputs) == 8 and not any("error" in output for output in outputs), result.stdout
    assert outputs[1]["hits"][0]["memory"]["text"] == "We deploy on Fridays after the 14:00 check."
    assert outputs[3]["text"] == "We deploy on Fridays after the 14:00 check."
    assert outputs[5]["records"][0]["state"] == "retired"
    assert [[c["op"] for c in r["changes"]] for r in outputs[6]["revisions"]] == [["add"], ["revise"], ["deactivate"]]
    assert outputs[7]["status"] == "empty", "the only entry is retired: nothing to prepare"


def test_the_httpx_client_example_runs_and_run_twice_stores_its_entry_once(server, capsys):
    [example] = _blocks("python")
    code = compile(example.replace("http://127.0.0.1:8765", server.url), SERVING, "exec")
    for _ in range(2):
        exec(code, {})  # noqa: S102
    out = capsys.readouterr().out
    assert "Ana prefers morning meetings." in out and '[1] notes/ana.meetings v1 (preference' in out
    import httpx

    listed = httpx.post(f"{server.url}/v1/memory/entries/list", json={"scope_id": "notes"}).json()["entries"]
    assert [entry["text"] for entry in listed] == ["Ana prefers morning meetings."]
