"""An app's UI beside pcmem: a 10 ms ticker that records how late each tick wakes while pcmem's calls run elsewhere,
in a fresh process so every "first" is the process's first. Prints one JSON object.

Usage: ``stall_probe.py STORE SCOPE thread|asyncio [--warm]`` (``pcmem bench stall``).

- ``thread``: the main thread is the UI (a ticker thread stands in for its event loop); a worker thread runs each
  call, as an app's worker-thread pattern does.
- ``asyncio``: the main thread runs an asyncio loop with a ticker task; the calls are ``pcmem.open_async``'s,
  awaited on that loop.

A tick that wakes late by more than the scheduler's own noise was kept from running: by a C call holding the GIL
(a DuckDB fetch building Python objects, a native library loading), a cycle collection, or, with asyncio, by work
done on the loop itself. Two references come first, in the same process: a second with no work (the scheduler's
noise), then a second of a worker running plain Python (which the interpreter interrupts every 5 ms to let the
ticker in: what any Python work in a worker costs the ticker on this machine, a loaded one included).

On Linux each lateness is also reported less the time the ticker waited for a CPU meanwhile (its run-queue wait,
``/proc/thread-self/schedstat``): what is left is the time it waited for the GIL (or the loop), which other
processes loading the machine inflate less.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pcmem

TICK = 0.010
REFERENCE_SECONDS = 1.0
#: Idle time between steps, so a late tick belongs to one step.
GAP = 0.2
QUERY = "Priya moved the Windows installer"


def rss_mb() -> float:
    """This process's resident set now (Linux), else its peak (other platforms), in MB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def busy(seconds: float) -> None:
    """Plain Python for ``seconds``: short C calls only, no allocation that lasts (no cycle collection)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(100))


def run_queue_wait() -> float:
    """Seconds this thread has waited for a CPU while runnable (Linux; 0.0 elsewhere)."""
    try:
        with open("/proc/thread-self/schedstat") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class Ticks:
    """Each tick's (woke at, late by, late by less its wait for a CPU) in seconds, each step's (name, start, end,
    rss), each cycle collection's (start, end), and when the busy reference ran."""

    def __init__(self) -> None:
        self.ticks: list[tuple[float, float, float]] = []
        self._waited = run_queue_wait()
        self.steps: list[tuple[str, float, float, float]] = []
        self.collections: list[tuple[float, float]] = []
        self.busy: tuple[float, float] = (0.0, 0.0)
        self._collecting = 0.0
        gc.callbacks.append(self._collection)

    def _collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._collecting = time.perf_counter()
        else:
            self.collections.append((self._collecting, time.perf_counter()))

    def run_busy(self) -> None:
        start = time.perf_counter()
        busy(REFERENCE_SECONDS)
        self.busy = (start, time.perf_counter())

    def collections_ms(self, start: float, end: float) -> float:
        """The longest cycle collection during [start, end] (any thread: it stops them all)."""
        return round(max((b - a for a, b in self.collections if b >= start and a <= end), default=0.0) * 1000, 1)

    def tick(self, asleep_since: float) -> float:
        now = time.perf_counter()
        waited, self._waited = self._waited, run_queue_wait()
        lateness = now - asleep_since - TICK
        self.ticks.append((now, lateness, max(0.0, lateness - (self._waited - waited))))
        return now

    def worst_ms(self, start: float, end: float, held: bool = False) -> float:
        """The latest tick whose sleep overlapped [start, end] (``held``: less its wait for a CPU)."""
        late = [tick[2 if held else 1] for tick in self.ticks if tick[0] >= start and tick[0] - tick[1] - TICK <= end]
        return round(max(late, default=0.0) * 1000, 1)

    def report(self, started: float) -> dict[str, Any]:
        reference_end = started + REFERENCE_SECONDS
        reference = sorted(lateness for woke, lateness, _ in self.ticks if woke <= reference_end)
        return {
            "reference_worst_ms": round(max(reference, default=0.0) * 1000, 1),
            "reference_p99_ms": round(reference[int(0.99 * (len(reference) - 1))] * 1000, 1) if reference else 0.0,
            "busy_python_worst_ms": self.worst_ms(*self.busy),
            "busy_python_worst_held_ms": self.worst_ms(*self.busy, held=True),
            "steps": [{"step": name, "worst_stall_ms": self.worst_ms(start, end),
                       "worst_held_ms": self.worst_ms(start, end, held=True), "took_ms": round((end - start) * 1000),
                       "collection_ms": self.collections_ms(start, end), "rss_mb": rss}
                      for name, start, end, rss in self.steps],
        }


def _steps(warm: bool) -> list[str]:
    return ["open", *(["warm"] if warm else []), "first search", "remember", "close"]


def run_thread(store: str, scope: str, warm: bool) -> dict[str, Any]:
    ticks = Ticks()
    state: dict[str, Any] = {}
    calls: dict[str, Callable[[], object]] = {
        "open": lambda: state.update(runtime=pcmem.open(store)),
        "warm": lambda: state["runtime"].warm(scopes=[scope]),
        "first search": lambda: state["runtime"].memory.for_scope(scope).search(QUERY),
        "remember": lambda: state["runtime"].memory.for_scope(scope).remember("A note written while the UI ticks."),
        "close": lambda: state["runtime"].close(),
    }
    done = threading.Event()

    def worker() -> None:
        try:
            time.sleep(REFERENCE_SECONDS)
            time.sleep(GAP)
            ticks.run_busy()
            for name in _steps(warm):
                time.sleep(GAP)
                start = time.perf_counter()
                calls[name]()
                end = time.perf_counter()
                ticks.steps.append((name, start, end, rss_mb()))
            time.sleep(GAP)
        finally:
            done.set()

    started = time.perf_counter()
    threading.Thread(target=worker, daemon=True).start()
    asleep_since = time.perf_counter()
    while not done.is_set():  # the UI thread: it only ticks
        time.sleep(TICK)
        asleep_since = ticks.tick(asleep_since)
    return ticks.report(started)


async def _ticker(ticks: Ticks, stop: asyncio.Event) -> None:
    asleep_since = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(TICK)
        asleep_since = ticks.tick(asleep_since)


async def run_asyncio(store: str, scope: str, warm: bool) -> dict[str, Any]:
    ticks = Ticks()
    stop = asyncio.Event()
    started = time.perf_counter()
    ticker = asyncio.create_task(_ticker(ticks, stop))
    await asyncio.sleep(REFERENCE_SECONDS + GAP)
    await asyncio.to_thread(ticks.run_busy)
    runtime: Any = None
    for name in _steps(warm):
        await asyncio.sleep(GAP)
        start = time.perf_counter()
        if name == "open":
            runtime = await pcmem.open_async(store)
        elif name == "warm":
            await runtime.warm(scopes=[scope])
        elif name == "first search":
            await runtime.memory.for_scope(scope).search(QUERY)
        elif name == "remember":
            await runtime.memory.for_scope(scope).remember("A note written while the loop ticks.")
        else:
            await runtime.close()
        ticks.steps.append((name, start, time.perf_counter(), rss_mb()))
    await asyncio.sleep(GAP)
    stop.set()
    await ticker
    return ticks.report(started)


def main(store: str, scope: str, variant: str, *flags: str) -> None:
    warm = "--warm" in flags
    rss_at_start = rss_mb()  # pcmem imported, nothing opened: where an app stands before its first call
    result = run_thread(store, scope, warm) if variant == "thread" else asyncio.run(run_asyncio(store, scope, warm))
    print(json.dumps({"variant": variant, "warm": warm, "rss_before_open_mb": rss_at_start, **result}))


if __name__ == "__main__":
    main(*sys.argv[1:])
