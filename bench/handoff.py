"""``pcmem bench owner``'s hand-off: what an agent feels when the store's owner is killed under load (#39).

Two real ``pcmem mcp`` hosts, each driven by the official MCP SDK client (keyed ``remember_memory`` and
``search_memory``, back to back), and a loop of ``pcmem search`` processes share one store. Each round SIGKILLs
whichever host owns the store, once both hosts have answered for :data:`SETTLE` seconds (a host that just started
is still loading); the host's client starts a new one (as a desktop app restarts a server it lost).
Per surviving client and round: the time from the kill to that client's next answer — its call in flight at the
kill, or the first one it started after — and every call that failed. The killed host's own call in flight is not
counted (its process is gone); its restart is timed separately (the time an MCP host waits for a new server).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Seconds of steady load before each kill, and after the last one (a host prepares to take over 3 s after it
#: starts, then loads for a second or two: see pcmem.compose.standby).
SETTLE = 6.0


@dataclass
class Calls:
    """One client's calls: (started, ended, ok, what) on the monotonic clock."""

    name: str
    done: list[tuple[float, float, bool, str]] = field(default_factory=list)

    def add(self, started: float, ok: bool, what: str) -> None:
        self.done.append((started, time.monotonic(), ok, what))


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 1)


#: ``pcmem mcp`` as the MCP client starts it, after writing its pid where the bench finds it (exec keeps the pid).
_EXEC_MCP = ("import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
             "os.execv(sys.executable, [sys.executable, '-m', 'pcmem', '--db', sys.argv[2], 'mcp'])")


def _cli_loop(path: Path, calls: Calls, stop: threading.Event) -> None:
    command = [sys.executable, "-m", "pcmem", "--db", str(path), "search", "-s", "bench", "--json", "release day"]
    while not stop.is_set():
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        calls.add(started, done.returncode == 0, done.stderr.strip()[-200:])


async def _host(name: str, path: Path, calls: Calls, pids: dict[str, int], restarts: list[float],
                answering: dict[str, float], stop: threading.Event) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    pid_file = path.with_name(f"{name.replace(' ', '-')}.pid")
    # The SDK's default environment for a server: a scrubbed one, as desktop hosts start `pcmem mcp` (#39)
    params = StdioServerParameters(command=sys.executable, args=["-c", _EXEC_MCP, str(pid_file), str(path)])
    i = 0
    lost_at: float | None = None
    while not stop.is_set():
        try:
            async with Client(params, read_timeout_seconds=60) as client:
                pids[name] = int(pid_file.read_text())
                key = name.replace(" ", "-")
                while not stop.is_set():
                    i += 1
                    for tool, arguments in (
                            ("remember_memory", {"scope_id": "hosts", "text": f"{name} note {i}", "key": f"{key}.{i % 20}"}),
                            ("search_memory", {"scope_id": "bench", "query": f"release {i % 7}"})):
                        started = time.monotonic()
                        outcome = await client.call_tool(tool, arguments)
                        ok = not outcome.is_error
                        calls.add(started, ok, tool if ok else f"{tool}: {str(outcome.content[0])[:200]}")
                        if ok:
                            answering.setdefault(name, time.monotonic())
                        if ok and lost_at is not None:
                            restarts.append((time.monotonic() - lost_at) * 1000)
                            lost_at = None
        except Exception:  # noqa: BLE001 - the host was killed under its client: start another one
            lost_at = time.monotonic() if lost_at is None else lost_at
            await anyio.sleep(0.05)


def handoff(path: Path, rounds: int) -> dict[str, Any]:
    """SIGKILL the owning MCP host ``rounds`` times under two hosts and a CLI loop; time to the next answer."""
    import anyio

    from pcmem.store.duckdb.lock_probe import lock_holder

    stop = threading.Event()
    clients = {name: Calls(name) for name in ("host a", "host b", "cli")}
    pids: dict[str, int] = {}
    restarts: list[float] = []
    answering: dict[str, float] = {}  # host: since when it answers (since its last start)
    kills: list[tuple[float, str]] = []
    taken: list[tuple[float, str]] = []

    def killer() -> None:
        try:
            kill_rounds()
        finally:
            stop.set()

    def kill_rounds() -> None:
        for _ in range(rounds):
            while len(answering) < 2 or time.monotonic() - max(answering.values()) < SETTLE:
                time.sleep(0.05)
            deadline = time.monotonic() + 60
            while (holder := lock_holder(path)) not in pids.values() or not holder:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no MCP host holds the store (holder {holder}, hosts {pids})")
                time.sleep(0.01)
            victim = next(name for name, pid in pids.items() if pid == holder)
            answering.pop(victim, None)
            os.kill(holder, signal.SIGKILL)
            killed_at = time.monotonic()
            kills.append((killed_at, victim))
            while (held := lock_holder(path)) in (None, 0, holder) and time.monotonic() < killed_at + 60:
                time.sleep(0.002)
            taken.append(((time.monotonic() - killed_at) * 1000,
                          next((name for name, pid in pids.items() if pid == held), "cli")))
        time.sleep(SETTLE)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_host, "host a", path, clients["host a"], pids, restarts, answering, stop)
            await anyio.sleep(1.0)  # the first host owns the store; the second is its client
            group.start_soon(_host, "host b", path, clients["host b"], pids, restarts, answering, stop)
            group.start_soon(anyio.to_thread.run_sync, _cli_loop, path, clients["cli"], stop)
            await anyio.to_thread.run_sync(killer)

    anyio.run(main)
    return {"rounds": rounds, "kills": [victim for _, victim in kills],
            "held_after_ms": [round(ms, 1) for ms, _ in taken], "new_owner": [who for _, who in taken],
            "clients": {name: _after_kills(calls, kills) for name, calls in clients.items()},
            "restart_p50_ms": percentile(restarts, 0.5), "restart_max_ms": percentile(restarts, 1.0)}


def _after_kills(calls: Calls, kills: list[tuple[float, str]]) -> dict[str, Any]:
    waits, failures = [], []
    for killed_at, victim in kills:
        if victim == calls.name:
            continue
        answered = [end for started, end, ok, _ in calls.done if ok and end > killed_at]
        if answered:
            waits.append((min(answered) - killed_at) * 1000)
    killed = [at for at, victim in kills if victim == calls.name]
    for started, end, ok, what in calls.done:
        in_flight_when_killed = any(started <= at <= end + 0.5 for at in killed)
        if not ok and not in_flight_when_killed:
            failures.append(what)
    steady = [(end - started) * 1000 for started, end, ok, _ in calls.done if ok]
    return {"calls": len(calls.done), "next_answer_p50_ms": percentile(waits, 0.5),
            "next_answer_p99_ms": percentile(waits, 0.99), "next_answer_ms": [round(w, 1) for w in waits],
            "call_p50_ms": percentile(steady, 0.5), "failed": len(failures), "failures": failures[:5]}
