"""``pcmem bench clients``: what several processes searching one store get together (#46 item 4).

Every search of a store runs in the one process that holds its file (the owner); the others are its clients and send
their searches over its socket (pcmem/owner). This starts an owner app and, as processes of their own, a library
client (what the TUI is), two agent hosts (the official MCP SDK client driving its own ``pcmem mcp``) and a CLI loop
(``pcmem search --json``, a new process per search) — see :mod:`pcmem_bench.programs.search_driver` — and runs
phases of ``seconds`` each: the owner searching alone (the reference: one process alone), then with one more client
searching at a time. Each phase reports, per process, searches/s and p50/p95 latency as that process sees it, the
total, and each client's p95 against the owner's own p95 in the same phase (at that load: the target is ≤ 2×).

Distinct queries throughout (no search reuses another's query embedding); one scope of ``entries`` entries.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from pcmem_bench import programs
from pcmem_bench.metrics import percentile

#: The clients, in the order the phases add them.
CLIENTS = ("library", "mcp", "mcp", "cli")


def _seed(path: Path, entries: int, embedder: str) -> None:
    import pcmem
    from pcmem_bench.perf import sentences

    with pcmem.open(path, embedder=None if embedder == "none" else embedder) as runtime:
        memory = runtime.memory.for_scope("bench")
        texts = sentences(entries)
        for start in range(0, entries, 500):
            memory.remember(pcmem.RememberRequest(entries=tuple(
                pcmem.NewEntry(text=text) for text in texts[start:start + 500])))


class Driver:
    def __init__(self, kind: str, store: Path, seed: int, embedder: str) -> None:
        self.kind = kind
        self.process = subprocess.Popen(programs.command("search_driver", kind, str(store), str(seed), embedder),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if line.strip() != "ready":
            self.process.kill()
            raise RuntimeError(f"the {kind} driver did not start: {self.process.communicate()[1][-800:]}")

    def start(self, seconds: float) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"run {seconds}\n")
        self.process.stdin.flush()

    def result(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.kind} driver stopped: {self.process.communicate()[1][-800:]}")
        return json.loads(line)

    def stop(self) -> None:
        try:
            self.process.communicate("quit\n", timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()


def _summary(name: str, found: dict[str, Any]) -> dict[str, Any]:
    latencies = found["ms"]
    return {"process": name, "searches": len(latencies),
            "per_s": round(len(latencies) / found["seconds"], 1),
            "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
            "p95_ms": round(percentile(latencies, 95), 2) if latencies else None,
            "cpu_s": round(found["cpu_s"], 3),
            "cpu_ms_per_search": round(found["cpu_s"] * 1000 / len(latencies), 2) if latencies else None}


def _phase(drivers: list[tuple[str, Driver]], seconds: float) -> dict[str, Any]:
    """Every driver searches for ``seconds`` at once. The owner's CPU is all the searching it did, its own and its
    clients' (every search runs there): per search served. A client's is what its side costs (for an MCP host, the
    SDK client and its ``pcmem mcp``; for the CLI loop, its processes)."""
    for _, driver in drivers:
        driver.start(seconds)
    rows = [_summary(name, driver.result()) for name, driver in drivers]
    owner = rows[0]
    served = sum(row["searches"] for row in rows)
    owner["cpu_ms_per_search_served"] = round(owner["cpu_s"] * 1000 / served, 2) if served else None
    for row in rows[1:]:
        row["p95_vs_owner"] = round(row["p95_ms"] / owner["p95_ms"], 2) if row["p95_ms"] and owner["p95_ms"] else None
    return {"processes": rows, "total_per_s": round(sum(row["per_s"] for row in rows), 1),
            "cores_busy": round(sum(row["cpu_s"] for row in rows) / seconds, 2),
            "owner_cores_busy": round(owner["cpu_s"] / seconds, 2),
            "load_average": round(os.getloadavg()[0], 1)}


def run(entries: int = 1000, seconds: float = 5.0, embedder: str = "minilm-l6-int8",
        clients: tuple[str, ...] = CLIENTS) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pcmem-clients-") as folder:
        store = Path(folder) / "clients.duckdb"
        _seed(store, entries, embedder)
        owner = Driver("owner", store, 0, embedder)
        started: list[tuple[str, Driver]] = [("owner", owner)]
        try:
            counts: dict[str, int] = {}
            for seed, kind in enumerate(clients, start=1):
                counts[kind] = counts.get(kind, 0) + 1
                started.append((f"{kind} {counts[kind]}" if clients.count(kind) > 1 else kind,
                                Driver(kind, store, seed, embedder)))
            phases = [_phase(started[:size], seconds) for size in range(1, len(started) + 1)]
        finally:
            for _, driver in reversed(started):
                driver.stop()
    alone = phases[0]["total_per_s"]
    return {"entries": entries, "seconds": seconds, "embedder": embedder, "cpu_count": os.cpu_count(),
            "alone_per_s": alone, "best_total_per_s": max(phase["total_per_s"] for phase in phases),
            "phases": phases}
