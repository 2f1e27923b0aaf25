"""``pcmem bench owner``: one store, many processes (#28) — what a client pays, and what a killed owner costs.

- **MCP**: ``search_memory`` and ``remember_memory`` p50 through one ``pcmem mcp`` host (the owner), then through a
  second host on the same store (a client of the first); ratio second ÷ one (target ≤ 1.3).
- **CLI**: ``pcmem search`` p50 as a cold process with nobody holding the store, and beside a running owner (an app
  holding it with ``pcmem.open``); ratio beside ÷ cold (target ≤ 0.4) and the p50 beside (target ≤ 250 ms).
- **Kill**: ``rounds`` times, SIGKILL the owner while two client processes write keyed upserts and read; the time
  until one of them holds the file (target ≤ 2 s), then every acknowledged write is read back and every entry
  revised once (nothing lost, every pre-crash entry writable). A fresh client joins after each round.
- **Hand-off** (:mod:`pcmem_bench.handoff`, #39): two ``pcmem mcp`` hosts and a CLI loop, the owning host SIGKILLed
  ``rounds`` times; per client the time to its next answer (target p99 ≤ 2 s) and the calls that failed.
- **Find, stop**: ``pcmem.open`` beside a running owner (the time to find it); the same owner stopped with SIGSTOP:
  how long a call and an open take to end with OwnerStoppedError.
- **Repeated query**: one search repeated, p50 in the owner and in a client of it (the search memo lives in the
  owner; what the client adds is the socket, JSON and validating the page).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pcmem_bench import programs


def _p50(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else float("nan")


def _seed(path: Path, entries: int) -> None:
    import pcmem
    from pcmem_bench.perf import sentences

    with pcmem.open(path) as runtime:
        runtime.memory.for_scope("bench").remember(pcmem.RememberRequest(entries=tuple(
            pcmem.NewEntry(entry_id=f"e{i}", text=text) for i, text in enumerate(sentences(entries)))))


def _start(program: str, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(programs.command(program, *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("ready"):
        process.kill()
        raise RuntimeError(f"a bench process did not start: {process.communicate()[1][-500:]}")
    return process


def _wall_ms(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[3:6])} failed: {done.stderr.strip()[-300:]}")
    return (time.perf_counter() - started) * 1000


def cli_search(path: Path, repeats: int) -> dict[str, Any]:
    """Cold ``pcmem search`` vs the same beside a running owner, fts and auto (hybrid) modes, interleaved per mode."""
    base = [sys.executable, "-m", "pcmem", "--db", str(path), "search", "-s", "bench", "--json"]
    result: dict[str, Any] = {}
    for mode in ("fts", "auto"):
        command = [*base, "--mode", mode, "which release did Priya move"]
        cold = [_wall_ms(command) for _ in range(repeats)]
        owner = _start("store_holder", str(path))
        try:
            beside = [_wall_ms(command) for _ in range(repeats)]
        finally:
            owner.communicate(timeout=60)
        result[mode] = {"cold_p50_ms": _p50(cold), "beside_owner_p50_ms": _p50(beside),
                        "ratio_beside_vs_cold": round(_p50(beside) / _p50(cold), 2)}
    return result


def mcp_calls(path: Path, repeats: int) -> dict[str, Any] | None:
    """Tool-call p50 through one host, then through a second host on the same store (None without the MCP SDK)."""
    try:
        import anyio
        from mcp import Client, StdioServerParameters
    except ImportError:
        return None
    params = StdioServerParameters(command=sys.executable, args=["-m", "pcmem", "--db", str(path), "mcp"])

    async def timed(client: Any, tool: str, arguments: dict[str, Any]) -> float:
        started = time.perf_counter()
        outcome = await client.call_tool(tool, arguments)
        if outcome.is_error:
            raise RuntimeError(outcome.content[0].text)
        return (time.perf_counter() - started) * 1000

    async def measure(client: Any, tag: str) -> dict[str, list[float]]:
        searches, writes = [], []
        await timed(client, "search_memory", {"scope_id": "bench", "query": "warm up"})
        for i in range(repeats):
            searches.append(await timed(client, "search_memory", {"scope_id": "bench", "query": f"release {i}"}))
            writes.append(await timed(client, "remember_memory",
                                      {"scope_id": "mcp", "kind": "fact", "text": f"{tag} note {i}"}))
        return {"search": searches, "remember": writes}

    async def run() -> dict[str, Any]:
        async with Client(params) as first:
            one = await measure(first, "one")
            async with Client(params) as second:
                two = await measure(second, "two")
        return {tool: {"one_host_p50_ms": _p50(one[tool]), "second_host_p50_ms": _p50(two[tool]),
                       "ratio_two_vs_one": round(_p50(two[tool]) / _p50(one[tool]), 2)} for tool in one}

    return anyio.run(run)


def kills(folder: Path, rounds: int) -> dict[str, Any]:
    """SIGKILL the owner ``rounds`` times under load; time to a new owner, acknowledged writes found."""
    import pcmem
    from pcmem.store.duckdb.lock_probe import lock_holder

    path, stop = folder / "kill.duckdb", folder / "stop"
    pcmem.open(path, embedder=None).close()
    processes: list[subprocess.Popen[str]] = []
    takeover_ms: list[float] = []
    names = iter(f"p{n}" for n in range(rounds + 3))

    def spawn() -> None:
        processes.append(_start("store_loader", str(path), next(names), str(stop)))

    for _ in range(3):
        spawn()
    for _ in range(rounds):
        time.sleep(0.5)  # let the clients write
        live = {p.pid: p for p in processes if p.poll() is None}
        holder = lock_holder(path)
        if holder not in live:
            raise RuntimeError(f"no bench process holds the store (holder {holder})")
        live[holder].send_signal(signal.SIGKILL)
        killed_at = time.perf_counter()
        live[holder].wait()
        while (now := lock_holder(path)) in (None, holder) or now not in live:
            if time.perf_counter() - killed_at > 30:
                raise RuntimeError("no client took the store over within 30 s")
            time.sleep(0.005)
        takeover_ms.append((time.perf_counter() - killed_at) * 1000)
        spawn()
    stop.touch()
    acked: list[str] = []
    errors: list[str] = []
    for process in processes:
        out, _ = process.communicate(timeout=120)
        for line in out.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "ack":
                acked.append(rest)
            elif kind == "err":
                errors.append(rest)
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("load")
        present = {e.entry.entry_id: e.entry.version for e in scope.list(pcmem.ListRequest(state="all")).entries}
        lost = sorted(set(acked) - set(present))
        unwritable = 0
        for entry_id, version in present.items():
            try:
                scope.revise(pcmem.ReviseRequest(entry_id=entry_id, text=f"{entry_id} revised after the kills",
                                                 expected_version=version))
            except pcmem.PcmemError:
                unwritable += 1
    return {"rounds": rounds, "takeover_p50_ms": _p50(takeover_ms), "takeover_max_ms": round(max(takeover_ms), 1),
            "takeover_ms": [round(v, 1) for v in takeover_ms], "acknowledged": len(set(acked)), "lost": len(lost),
            "errors": errors[:10], "error_count": len(errors), "entries_not_writable": unwritable}


def repeated_query(path: Path, repeats: int) -> dict[str, Any]:
    """One query searched ``repeats * 20`` times: p50 in the owner (this process), then in a client of an owner."""
    import pcmem

    def timed(runtime: Any) -> float:
        scope = runtime.memory.for_scope("bench")
        scope.search("which release did Priya move")
        times = []
        for _ in range(repeats * 20):
            started = time.perf_counter()
            scope.search("which release did Priya move")
            times.append((time.perf_counter() - started) * 1000)
        return round(statistics.median(times), 2)

    with pcmem.open(path) as runtime:
        owner = timed(runtime)
    holder = _start("store_holder", str(path))
    try:
        with pcmem.open(path) as runtime:
            client = timed(runtime)
    finally:
        holder.communicate(timeout=60)
    return {"owner_p50_ms": owner, "client_p50_ms": client}


def find_and_stop(path: Path, repeats: int) -> dict[str, Any]:
    """How long a process takes to find a running owner (``pcmem.open`` → a client), and to be told the owner is
    stopped (SIGSTOP): a call on an open client, and ``pcmem.open`` itself, until OwnerStoppedError."""
    import pcmem

    holder = _start("store_holder", str(path))
    try:
        finds = []
        for _ in range(repeats * 4):
            started = time.perf_counter()
            runtime = pcmem.open(path)
            finds.append((time.perf_counter() - started) * 1000)
            assert runtime.owner_pid == holder.pid
            runtime.close()
        runtime = pcmem.open(path)
        runtime.memory.for_scope("bench").search("warm up")
        holder.send_signal(signal.SIGSTOP)
        try:
            call, opening = [], []
            for _ in range(repeats):
                call.append(_until_stopped(lambda: runtime.memory.for_scope("bench").search("release")))
                opening.append(_until_stopped(lambda: pcmem.open(path)))
        finally:
            holder.send_signal(signal.SIGCONT)
            runtime.close()
    finally:
        holder.communicate(timeout=60)
    return {"find_p50_ms": _p50(finds), "stopped_call_p50_ms": _p50(call), "stopped_call_max_ms": round(max(call), 1),
            "stopped_open_p50_ms": _p50(opening), "stopped_open_max_ms": round(max(opening), 1)}


def _until_stopped(call: Any) -> float:
    import pcmem

    started = time.perf_counter()
    try:
        call()
    except pcmem.OwnerStoppedError:
        return (time.perf_counter() - started) * 1000
    raise RuntimeError("a stopped owner answered")


def run(entries: int = 200, repeats: int = 5, rounds: int = 5) -> dict[str, Any]:
    from pcmem_bench import handoff

    with tempfile.TemporaryDirectory(prefix="pcmem-owner-") as folder:
        store = Path(folder) / "owner.duckdb"
        _seed(store, entries)
        result = {
            "entries": entries, "repeats": repeats,
            "mcp": mcp_calls(store, repeats),
            "cli_search": cli_search(store, repeats),
            "repeated_query": repeated_query(store, repeats),
            "find_and_stop": find_and_stop(store, repeats),
            "kill": kills(Path(folder), rounds),
        }
        try:
            import mcp  # noqa: F401 - the hand-off drives real MCP hosts
        except ImportError:
            result["handoff"] = None
        else:
            result["handoff"] = handoff.handoff(store, rounds)
        return {**result, "cpu_count": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()]}
