"""One process searching a store in a loop on command, for ``pcmem bench clients``.

Usage: ``search_driver.py KIND STORE SEED EMBEDDER``. KIND is who searches:

- ``owner``: an app that opens the store first — it holds the file and serves every other process — and searches
  through its own runtime;
- ``library``: an app that opens it next (what the TUI does): a client of the owner, searching through the library;
- ``mcp``: an agent host: the official MCP SDK client driving its own ``pcmem mcp`` (a client of the owner), calling
  ``search_memory``;
- ``cli``: a shell loop: ``pcmem search --json`` as a new process per search.

Prints ``ready`` once warm, then reads commands: ``run SECONDS`` searches for that long and prints one JSON line
(each search's milliseconds, and this process's CPU seconds), ``quit`` (or the end of stdin) exits.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCOPE = "bench"


def queries(seed: int) -> Callable[[], str]:
    """An endless run of distinct queries worded like the stored notes (another seed's sentences, without their
    note and ticket numbers): no two searches share a query embedding, and most find full-text matches."""
    from pcmem_bench.perf import sentences

    count = iter(range(10**9))
    batch: list[str] = []

    def next_query() -> str:
        n = next(count)
        if n % 1000 == 0:
            batch[:] = [text.split(" (note")[0] for text in sentences(1000, seed=1000 * seed + n // 1000 + 17)]
        return f"{batch[n % 1000]} {n // 1000}" if n >= 1000 else batch[n]

    return next_query


def cpu_seconds() -> float:
    """CPU time of this process, its children that ended (a CLI search) and its children still running (the
    ``pcmem mcp`` an MCP client started): all that searching from here costs."""
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = time.process_time() + ended.ru_utime + ended.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        for pid in children.read_text().split():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # it ended meanwhile (and is counted with the ended ones once reaped)
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def loop(search: Callable[[str], object], seconds: float, next_query: Callable[[], str]) -> dict[str, Any]:
    latencies: list[float] = []
    cpu = cpu_seconds()
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        query = next_query()
        begun = time.perf_counter()
        search(query)
        latencies.append((time.perf_counter() - begun) * 1000)
    return {"ms": [round(value, 3) for value in latencies], "seconds": time.perf_counter() - started,
            "cpu_s": cpu_seconds() - cpu}


def serve_commands(search: Callable[[str], object], seed: int) -> None:
    next_query = queries(seed)  # one run of queries across the phases: a later phase repeats none
    print("ready", flush=True)
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "run":
            print(json.dumps(loop(search, float(rest[0]), next_query)), flush=True)
        elif command == "quit":
            return


def library(store: str, seed: int, embedder: str) -> None:
    import pcmem

    with pcmem.open(store, embedder=None if embedder == "none" else "auto") as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        mode = "fts" if embedder == "none" else "auto"
        memory.search(pcmem.SearchMemoryRequest(query="warm up", mode=mode))
        serve_commands(lambda q: memory.search(pcmem.SearchMemoryRequest(query=q, mode=mode)), seed)


def cli(store: str, seed: int, embedder: str) -> None:
    base = [sys.executable, "-m", "pcmem", "--db", store, "search", "-s", SCOPE, "--json",
            "--mode", "fts" if embedder == "none" else "auto"]

    def search(query: str) -> None:
        done = subprocess.run([*base, query], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip()[-300:])

    search("warm up")
    serve_commands(search, seed)


def mcp(store: str, seed: int, embedder: str) -> None:
    import anyio
    import anyio.to_thread
    from mcp import Client, StdioServerParameters

    # The SDK's short default environment, as a host passes it: pcmem finds the owner from the file and the account.
    params = StdioServerParameters(command=sys.executable, args=["-m", "pcmem", "--db", store, "mcp"])
    mode = "fts" if embedder == "none" else "auto"

    async def run() -> None:
        async with Client(params) as client:
            async def search(query: str) -> None:
                outcome = await client.call_tool("search_memory", {"scope_id": SCOPE, "query": query, "mode": mode})
                if outcome.is_error:
                    raise RuntimeError(str(outcome.content))

            await search("warm up")
            print("ready", flush=True)
            next_query = None
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                command, *rest = line.split() or ["quit"]
                if command != "run":
                    return
                next_query = next_query or queries(seed)
                latencies: list[float] = []
                cpu, started = cpu_seconds(), time.perf_counter()
                while time.perf_counter() - started < float(rest[0]):
                    begun = time.perf_counter()
                    await search(next_query())
                    latencies.append((time.perf_counter() - begun) * 1000)
                print(json.dumps({"ms": [round(v, 3) for v in latencies], "seconds": time.perf_counter() - started,
                                  "cpu_s": cpu_seconds() - cpu}), flush=True)

    anyio.run(run)


if __name__ == "__main__":
    kind, path, seed_text, embedder_name = sys.argv[1:5]
    {"owner": library, "library": library, "cli": cli, "mcp": mcp}[kind](path, int(seed_text), embedder_name)
