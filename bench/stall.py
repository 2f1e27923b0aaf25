"""``pcmem bench stall``: how long pcmem's calls keep an app's UI thread or asyncio loop from running (issue #42).

An app runs pcmem in a worker thread (or awaits ``open_async``'s calls) so that its UI keeps drawing; that holds only
while pcmem's work leaves the GIL free and, with asyncio, off the loop. Each run is a fresh process
(:mod:`pcmem_bench.programs.stall_probe`) with a 10 ms ticker where the UI would be, on its own copy of one store
with ``entries`` entries in one scope (real MiniLM vectors), doing: open, (warm,) first search, remember, close.
For each step it reports the ticker's longest stall (how late its worst tick woke) and the process's RSS after it;
the references are the same ticker's worst lateness in the same process with no work (the machine's scheduler alone)
and beside a worker running plain Python (what any Python work in a worker costs the ticker here: on a loaded
machine a thread holding the GIL is also descheduled while it holds it). The budget is 20 ms a step. The longest
cycle collection during each step is reported too: a collection stops every thread. On Linux each stall is also
given less the ticker's own wait for a CPU ("held"): the part pcmem's process kept it waiting.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pcmem_bench import programs

SCOPE = "bench"
BUDGET_MS = 20.0
VARIANTS = ("thread", "asyncio")


def build_store(path: Path, entries: int) -> None:
    """``entries`` sentences in one scope, embedded by the store's default model (the first search loads it)."""
    import pcmem
    from pcmem.types.memory import NewEntry, RememberRequest
    from pcmem_bench.perf import sentences

    texts = sentences(entries)
    with pcmem.open(path) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        for start in range(0, entries, 2000):
            memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=texts[i])
                                                          for i in range(start, min(entries, start + 2000)))))


def probe(store: Path, variant: str, warm: bool, workdir: Path, python: str | None = None) -> dict[str, Any]:
    """One fresh process on a fresh copy of ``store``; ``python``: another interpreter (another install of pcmem)."""
    copy = workdir / f"probe-{variant}.duckdb"
    shutil.copyfile(store, copy)  # closed and checkpointed: the file alone is the store
    command = programs.command("stall_probe", str(copy), SCOPE, variant, *(["--warm"] if warm else []))
    if python is not None:
        command[0] = python
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    finally:
        for leftover in (copy, copy.with_name(copy.name + ".wal")):
            leftover.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"stall probe ({variant}) failed: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(values: Iterable[float]) -> float:
    return round(statistics.median(values), 1)


def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per step of runs of one kind: the median and the worst of each run's longest stall (and of it less
    the ticker's wait for a CPU), the longest collection, the median time and RSS."""
    rows = []
    for index, step in enumerate(runs[0]["steps"]):
        steps = [run["steps"][index] for run in runs]
        stalls, held = [s["worst_stall_ms"] for s in steps], [s["worst_held_ms"] for s in steps]
        rows.append({"step": step["step"], "stall_ms_p50": _median(stalls), "stall_ms_max": max(stalls),
                     "held_ms_p50": _median(held), "held_ms_max": max(held),
                     "took_ms_p50": _median(s["took_ms"] for s in steps),
                     "collection_ms_max": max(s["collection_ms"] for s in steps),
                     "rss_mb_p50": _median(s["rss_mb"] for s in steps)})
    return rows


def _kind(variant: str, warm: bool, python: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    def each(field: str) -> list[float]:
        return [run[field] for run in runs]
    return {"variant": variant, "warm": warm, "python": python, "steps": summarise(runs),
            "reference_worst_ms_p50": _median(each("reference_worst_ms")),
            "reference_p99_ms_p50": _median(each("reference_p99_ms")),
            "busy_python_worst_ms_p50": _median(each("busy_python_worst_ms")),
            "busy_python_worst_held_ms_p50": _median(each("busy_python_worst_held_ms")),
            "rss_before_open_mb_p50": _median(each("rss_before_open_mb"))}


def run(entries: int, repeats: int, variants: list[str], warm_ups: list[bool], store: Path | None = None,
        python: str | None = None, baseline: str | None = None) -> dict[str, Any]:
    """Every kind of run ``repeats`` times; with ``baseline`` (another interpreter: another install of pcmem), its
    runs without a warm-up alternate with these, so that both meet the same machine."""
    ours = python or sys.executable
    with tempfile.TemporaryDirectory(prefix="pcmem-stall-") as folder:
        workdir = Path(folder)
        if store is None:
            store = workdir / "stall.duckdb"
            build_store(store, entries)
        result: dict[str, Any] = {"python": ours, "baseline": baseline, "entries": entries, "repeats": repeats,
                                  "budget_ms": BUDGET_MS, "kinds": [],
                                  "load_average": [round(x, 2) for x in os.getloadavg()], "cpu_count": os.cpu_count()}
        for variant in variants:
            for warm in warm_ups:
                runs: list[dict[str, Any]] = []
                theirs: list[dict[str, Any]] = []
                for _ in range(repeats):
                    runs.append(probe(store, variant, warm, workdir, python))
                    if baseline is not None and not warm:
                        theirs.append(probe(store, variant, False, workdir, baseline))
                result["kinds"].append(_kind(variant, warm, ours, runs))
                if theirs:
                    result["kinds"].append(_kind(variant, warm, str(baseline), theirs))
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return result
