"""Every tool called from the MCP Inspector's CLI, old and current (issue 43), against ``pcmem serve``'s ``/mcp``.

MCP Inspector 0.15.0 is what ``npm install @modelcontextprotocol/inspector`` gives on Node 20: its CLI turns a
``--tool-arg key=value`` into a number, a boolean or JSON only when the property's schema says its ``type``, so every
property must have one (objects and arrays arrived as strings before). 2.12.0 is the current one (it asks for Node ≥
22.19 and runs on 20 with a warning); its ``tools/list --strict`` reports schema portability problems.

Both are installed on first use with npm into a cache folder outside the repository (``$PCMEM_INSPECTOR_CACHE``,
default ``~/.cache/pcmem-tests/mcp-inspector``); the tests skip, saying why, without node and npm or when npm cannot
reach its registry.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import pcmem  # noqa: E402
from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402
from pcmem.serve.tools import TOOL_NAMES  # noqa: E402

INSPECTORS = ("0.15.0", "2.12.0")
PACKAGE = "@modelcontextprotocol/inspector"


def calls(scope: str) -> list[tuple[str, dict[str, str]]]:
    """Every tool with arguments of every JSON type, as text the way a person types them on the command line;
    checked against what the result says arrived (an object stays an object, a number a number)."""
    return [(tool, {key: value.replace("SCOPE", scope) for key, value in arguments.items()})
            for tool, arguments in CALLS]


SCOPE = "SCOPE"
CALLS: list[tuple[str, dict[str, str]]] = [
    ("remember_memory", {"scope_id": SCOPE, "text": "Ana prefers the Helix editor.", "kind": "preference",
                         "key": "editor", "metadata": '{"source": "inspector", "turn": 3}'}),
    ("remember_memory", {"scope_id": SCOPE, "text": "Deploys go out on Tuesdays.", "expected_revision": "1"}),
    ("prepare_context", {"scope_id": SCOPE, "query": "editor", "max_bytes": "600", "explain": "true",
                         "more_scope_ids": '["elsewhere"]'}),
    ("search_memory", {"scope_id": SCOPE, "query": "editor", "limit": "5", "kinds": '["preference"]',
                       "metadata": '{"turn": 3}', "mode": "auto"}),
    ("list_memory_entries", {"scope_id": SCOPE, "include_inactive": "true", "limit": "10"}),
    ("get_memory_entry", {"scope_id": SCOPE, "entry_id": "editor"}),
    ("revise_memory_entry", {"scope_id": SCOPE, "entry_id": "editor", "text": "Ana prefers Neovim.",
                             "expected_version": "1", "metadata": '{"source": "inspector", "turn": 4}'}),
    ("retire_memory_entry", {"scope_id": SCOPE, "entry_id": "editor", "expected_version": "2"}),
    ("reactivate_memory_entry", {"scope_id": SCOPE, "entry_id": "editor", "expected_version": "2",
                                 "reason": "back in use"}),
    ("list_recent_memory", {"scope_ids": f'["{SCOPE}"]', "limit": "5"}),
    ("list_scopes", {}),
    ("entry_history", {"scope_id": SCOPE, "entry_id": "editor"}),
    ("forget_memory_entry", {"scope_id": SCOPE, "entry_id": "editor"}),
    ("forget_memory_scope", {"scope_id": SCOPE, "confirm_scope_id": SCOPE}),
]


def _cache() -> Path:
    return Path(os.environ.get("PCMEM_INSPECTOR_CACHE") or Path.home() / ".cache" / "pcmem-tests" / "mcp-inspector")


def _installed(version: str) -> Path:
    """The Inspector's launcher, installed into the cache on first use (under a lock: other test runs may share
    the cache); skips the test when node or npm is missing or the install fails."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("needs node and npm (Debian: apt-get install nodejs npm)")
    folder = _cache() / version
    launcher = folder / "node_modules" / ".bin" / "mcp-inspector"
    _cache().mkdir(parents=True, exist_ok=True)
    with open(_cache() / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not launcher.exists():
            staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=_cache()))
            done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
                                   str(staging), f"{PACKAGE}@{version}"], capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                pytest.skip(f"npm could not install {PACKAGE}@{version}: {done.stderr.strip()[-300:]}")
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
    return launcher


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("inspector") / "inspector.duckdb"
    runtime = pcmem.open(path, embedder=None)
    api = MemoryApi(runtime, path)
    try:
        with LiveServer(create_app(api, ServeOptions())) as live:
            yield f"{live.url}/mcp"
    finally:
        api.close()
        runtime.close()


def _run(launcher: Path, url: str, home: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json"), "NO_COLOR": "1"}
    return subprocess.run([str(launcher), "--cli", url, "--transport", "http", *arguments], capture_output=True,
                          text=True, timeout=120, env=env)


def _called(launcher: Path, url: str, home: Path, tool: str, arguments: dict[str, str]) -> dict[str, Any]:
    pairs = [item for key, value in arguments.items() for item in ("--tool-arg", f"{key}={value}")]
    done = _run(launcher, url, home, "--method", "tools/call", "--tool-name", tool, *pairs)
    assert done.returncode == 0, (tool, done.stdout[-500:], done.stderr[-500:])
    result = json.loads(done.stdout[done.stdout.index("{"):])
    assert not result.get("isError"), (tool, result["content"][0]["text"])
    return json.loads(result["content"][0]["text"])


@pytest.mark.parametrize("version", INSPECTORS)
def test_the_inspector_cli_calls_every_tool(server, tmp_path, version):
    launcher = _installed(version)
    answers = {}
    for tool, arguments in calls(f"inspector-{version}"):
        answers.setdefault(tool, _called(launcher, server, tmp_path, tool, arguments))
    assert set(answers) == set(TOOL_NAMES), "every tool was called"
    assert answers["remember_memory"]["entry"]["metadata"] == {"source": "inspector", "turn": 3}, "an object"
    assert [hit["entry_id"] for hit in answers["search_memory"]["hits"]] == ["editor"], "kinds and metadata filter"
    assert answers["prepare_context"]["bytes"] <= 600 and "omitted" in answers["prepare_context"]
    assert answers["revise_memory_entry"]["entry"]["version"] == 2
    assert answers["reactivate_memory_entry"]["entry"]["state"] == "active"
    assert answers["forget_memory_entry"]["erased_entry_ids"] == ["editor"]


def test_the_current_inspector_finds_no_schema_problem(server, tmp_path):
    listed = _run(_installed(INSPECTORS[-1]), server, tmp_path, "--method", "tools/list", "--strict")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert {tool["name"] for tool in json.loads(listed.stdout[listed.stdout.index("{"):])["tools"]} == \
        set(TOOL_NAMES)
