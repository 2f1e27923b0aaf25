"""A real ``pcmem mcp`` holding the bench's store first (``python -m pcmem_bench.tui_timings --owner mcp``): an agent started
before the TUI, so the TUI is its client for every interaction."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: The first line an MCP host sends: ``pcmem mcp`` answers it once the store is open (and served to other processes).
MCP_HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}


def start_mcp_owner(path: Path) -> subprocess.Popen[str]:
    """A real ``pcmem mcp`` holding the store, as an agent started before the TUI holds it; returns once it has
    answered the host's first request (the store is open then). Closing its stdin stops it, as a host does."""
    server = subprocess.Popen([sys.executable, "-m", "pcmem", "--db", str(path), "mcp"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(MCP_HELLO) + "\n")
    server.stdin.flush()
    if not server.stdout.readline():
        server.kill()
        raise RuntimeError(f"pcmem mcp did not start: {server.communicate()[1][-2000:]}")
    return server


def stop_mcp_owner(server: subprocess.Popen[str]) -> None:
    assert server.stdin is not None
    server.stdin.close()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
