"""``pcmem bench serve``: what the server costs over the same search in-process, and a loopback load run.

1. Latency: the same searches on the same data in-process and, in a ``pcmem serve`` process, through HTTP v1
   (httpx) and MCP (the SDK's streamable-HTTP client at /mcp), interleaved in one run; p50/p95 and p50 ratios.
2. Load: ``clients`` concurrent clients × ``requests`` mixed requests (searches, remembers, compare-and-swap revises)
   against the same server: throughput, p50/p95, errors by code (409s are expected: CAS revises race), and a check
   that every acknowledged write can be read back afterwards by its exact citation.

Only loopback addresses; every loop is bounded by its arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pcmem
from pcmem.serve import open_for_serving
from pcmem.serve.live import LOOPBACK
from pcmem_bench.metrics import percentile

SCOPES = ("alpha", "beta", "gamma", "delta")
TOPICS = ("deploy", "release", "coffee", "budget", "travel", "hiring", "design", "security", "backup", "testing")
QUERIES = ("when do we deploy?", "release checklist approvals", "coffee machine broken", "travel budget limit",
           "hiring plan for the mobile team", "security review of the backups")


def _text(rng: random.Random, i: int) -> str:
    a, b = rng.sample(TOPICS, 2)
    return f"Note {i}: the {a} plan depends on the {b} review, owner #{rng.randrange(100)}, due week {i % 52 + 1}."


def _stats(values_ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values_ms, 50), 3), "p95_ms": round(percentile(values_ms, 95), 3),
            "n": len(values_ms)}


def _seed(runtime: pcmem.SyncRuntime, entries: int, rng: random.Random) -> None:
    per_scope = max(1, entries // len(SCOPES))
    for scope in SCOPES:
        texts = [_text(rng, i) for i in range(per_scope)]
        runtime.memory.for_scope(scope).remember(pcmem.RememberRequest(
            entries=tuple(pcmem.NewEntry(text=text) for text in texts)))


async def _latency(runtime: pcmem.SyncRuntime, url: str, repeats: int, rng: random.Random) -> dict[str, list[float]]:
    """The same search through the three paths, interleaved in a random order per round, so that load from
    other processes on the machine falls on all three alike (sequential blocks would compare different moments)."""
    import httpx
    from mcp import Client

    timings: dict[str, list[float]] = {"in_process": [], "http": [], "mcp": []}
    memory = runtime.memory.for_scope(SCOPES[0])
    async with httpx.AsyncClient(base_url=url, timeout=120) as http, Client(f"{url}/mcp") as mcp:
        async def in_process(query: str) -> None:
            memory.search(pcmem.SearchMemoryRequest(query=query, limit=10))

        async def over_http(query: str) -> None:
            response = await http.post("/v1/memory/search", json={"scope_id": SCOPES[0], "query": query, "limit": 10})
            response.raise_for_status()

        async def over_mcp(query: str) -> None:
            result = await mcp.call_tool("search_memory", {"scope_id": SCOPES[0], "query": query, "limit": 10})
            if result.is_error:
                raise RuntimeError(f"search_memory failed: {result.structured_content}")

        paths = [("in_process", in_process), ("http", over_http), ("mcp", over_mcp)]
        for i in range(repeats):
            query = QUERIES[i % len(QUERIES)]
            rng.shuffle(paths)
            for name, call in paths:
                start = time.perf_counter()
                await call(query)
                timings[name].append((time.perf_counter() - start) * 1000)
    return timings


async def _load(url: str, clients: int, requests: int, seed: int) -> dict[str, Any]:
    import httpx

    timings: dict[str, list[float]] = {"search": [], "remember": [], "revise": []}
    statuses: Counter[str] = Counter()
    acknowledged: list[dict[str, Any]] = []  # citations of every write the server answered 200 to

    async def client_run(index: int, client: httpx.AsyncClient) -> None:
        rng = random.Random(seed * 1000 + index)
        for n in range(requests):
            scope = SCOPES[rng.randrange(len(SCOPES))]
            roll = rng.random()
            found: list[dict[str, Any]] = []
            if roll < 0.6:
                kind, path = "search", "/v1/memory/search"
                body: dict[str, Any] = {"scope_id": scope, "query": rng.choice(QUERIES), "limit": 10}
            else:
                # Read the head, then revise an entry citing it: another client may write in between (409). v1
                # records carry no citation (PowerContext 1.4.1), pcmem's coarse search does.
                found = found if roll < 0.85 else (await client.post("/x/pcmem/search", json={
                    "scope_id": scope, "query": rng.choice(QUERIES), "rerank": False})).json()["hits"]
            if 0.6 <= roll and not found:
                kind, path = "remember", "/v1/memory/remember"
                body = {"scope_id": scope, "kind": "fact", "text": f"client {index} request {n}: " + _text(rng, n)}
            elif roll >= 0.85:
                kind, path = "revise", "/v1/memory/entries/revise"
                cited = rng.choice(found)["citation"]
                citation = {"memory_ref": {"family": "memory", "artifact_id": cited["artifact_id"],
                                           "revision": cited["revision"]},
                            "entry_id": cited["entry_id"], "entry_version_id": cited["entry_version_id"]}
                body = {"scope_id": scope, "citation": citation, "kind": "fact",
                        "text": f"client {index} revised {n}: " + _text(rng, n)}
            start = time.perf_counter()
            response = await client.post(path, json=body)
            timings[kind].append((time.perf_counter() - start) * 1000)
            payload = response.json()
            statuses[f"{kind} {response.status_code} {payload['error']['code'] if 'error' in payload else 'ok'}"] += 1
            if response.status_code == 200 and kind != "search":
                [record] = payload["records"]
                acknowledged.append({"scope": scope, "entry_id": record["artifact"]["artifact_id"],
                                     "version": record["artifact"]["revision"], "text": body["text"]})

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        start = time.perf_counter()
        await asyncio.gather(*(client_run(i, client) for i in range(clients)))
        elapsed = time.perf_counter() - start
    total = sum(len(v) for v in timings.values())
    every = [t for values in timings.values() for t in values]
    return {"clients": clients, "requests_per_client": requests, "requests": total,
            "seconds": round(elapsed, 3), "throughput_rps": round(total / elapsed, 1), "all": _stats(every),
            **{kind: _stats(values) for kind, values in timings.items()},
            "outcomes": dict(sorted(statuses.items())), "acknowledged": acknowledged}


def _verify(runtime: pcmem.SyncRuntime, acknowledged: list[dict[str, Any]]) -> dict[str, int]:
    present = 0
    for write in acknowledged:
        history = runtime.memory.for_scope(write["scope"]).history(write["entry_id"])
        present += any(event.entry.version == write["version"] and event.entry.text == write["text"]
                       for event in history.events)
    return {"acknowledged_writes": len(acknowledged), "present_afterwards": present}


@contextlib.contextmanager
def _served(path: Path, embedder: str | None) -> Iterator[str]:
    """``pcmem serve`` in its own process, as deployed (its own interpreter and GIL), on a free loopback port."""
    command = [sys.executable, "-m", "pcmem", "--db", str(path)]
    command += ["--embedder", embedder] if embedder else []
    command += ["serve", "--host", LOOPBACK, "--port", "0", "--json", "--rerank", "none"]
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            line = process.stdout.readline() if process.stdout else ""
            if not line:
                log.seek(0)
                raise RuntimeError(f"pcmem serve did not start: {log.read()[-2000:]}")
            yield json.loads(line)["url"]
        finally:
            process.terminate()
            process.wait(60)


def run(entries: int = 400, repeats: int = 100, clients: int = 16, requests: int = 100,
        embedder: str | None = None, seed: int = 7) -> dict[str, Any]:
    """Two copies of one seeded store: the server process opens one, this process the other (a DuckDB file is
    opened by one process at a time), so the same search runs on the same data in-process and through the server."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="pcmem-bench-serve-") as folder:
        local, served = Path(folder) / "local.duckdb", Path(folder) / "served.duckdb"
        with open_for_serving(local, embedder=embedder, rerank="none") as runtime:
            _seed(runtime, entries, rng)
        for suffix in ("", ".wal"):  # closed, so normally checkpointed; copy a leftover WAL all the same
            if local.with_name(local.name + suffix).exists():
                shutil.copyfile(local.with_name(local.name + suffix), served.with_name(served.name + suffix))
        with open_for_serving(local, embedder=embedder, rerank="none") as runtime, _served(served, embedder) as url:
            model = runtime.embedder.profile.model_id if runtime.embedder else None
            asyncio.run(_latency(runtime, url, 10, rng))  # warm-up rounds, not reported
            timings = asyncio.run(_latency(runtime, url, repeats, rng))
            load = asyncio.run(_load(url, clients, requests, seed))
        with pcmem.open(served, embedder=None) as runtime:
            verified = _verify(runtime, load.pop("acknowledged"))
    in_process, http, mcp = timings["in_process"], timings["http"], timings["mcp"]
    base = percentile(in_process, 50)
    return {
        "entries": entries, "repeats": repeats, "embedder": model,
        "latency": {"in_process": _stats(in_process), "http": _stats(http), "mcp": _stats(mcp)},
        "ratio_http_p50": round(percentile(http, 50) / base, 2),
        "ratio_mcp_p50": round(percentile(mcp, 50) / base, 2),
        "load": {**load, **verified},
    }
