"""``pcmem bench clients``: an owner app searching alone, then with client processes added one by one (real
processes: a library client, an MCP host driven by the SDK, a CLI loop)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("mcp")


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))  # the owner's socket path must stay short
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_each_phase_adds_one_client_and_compares_its_p95_with_the_owners():
    from pcmem_bench.clients import run

    result = run(entries=40, seconds=0.5, embedder="none", clients=("library", "mcp", "cli"))
    phases = result["phases"]
    assert [[row["process"] for row in phase["processes"]] for phase in phases] == [
        ["owner"], ["owner", "library"], ["owner", "library", "mcp"], ["owner", "library", "mcp", "cli"]]
    for phase in phases:
        owner, *clients = phase["processes"]
        assert owner["searches"] > 0 and owner["cpu_ms_per_search_served"] > 0
        for row in clients:
            assert row["searches"] > 0, row
            assert row["p95_vs_owner"] == pytest.approx(row["p95_ms"] / owner["p95_ms"], rel=0.02)
    assert result["alone_per_s"] == phases[0]["total_per_s"]
