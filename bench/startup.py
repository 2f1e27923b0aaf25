"""``pcmem bench startup``: what one cold CLI call costs, against floors measured in the same run.

Agents shell out to ``pcmem search`` once per question, so a call's wall time is mostly Python starting, imports
and opening things, not the search. Each figure is the p50 of ``repeats`` fresh processes on one store:

- ``fts``: ``pcmem search --mode fts`` vs the *floor* — ``python -c`` importing duckdb, opening the same file and
  running one query over the full-text index tables (target ≤ 1.5× the floor).
- ``hybrid``: ``pcmem search --mode hybrid`` vs the floor plus the *model floor* — a process creating the
  embedder's ONNX Runtime session and embedding one query with onnxruntime and tokenizers directly, minus Python's
  own start (target ≤ floor + 1.5 × model floor).
- ``import``: ``python -c "import pcmem"`` and which heavy modules it pulled in (none should be).

pcmem's bytecode is compiled first, as an installed package's is: with ``PYTHONDONTWRITEBYTECODE`` set (or a
read-only checkout) every call would otherwise compile pcmem's modules from source (~80 ms), which the floors,
importing installed packages, never pay.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pcmem_bench import programs

HEAVY = ("fastembed", "onnxruntime", "pyarrow", "textual", "llama_cpp")
QUERY = "Priya moved the Windows installer"


def _wall(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # inherits OPENBLAS_NUM_THREADS
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed: {done.stderr.strip()[-500:]}")
    return wall * 1000, done.stdout


def _p50(values: list[float]) -> float:
    return statistics.median(values)


def _build_store(path: Path, entries: int) -> None:
    import pcmem
    from pcmem.types.memory import NewEntry, RememberRequest
    from pcmem_bench.perf import sentences

    with pcmem.open_sync(path) as runtime:  # the default embedder: hybrid needs real vectors
        texts = sentences(entries)
        runtime.memory.for_scope("bench").remember(
            RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=t) for i, t in enumerate(texts))))


def _model_dir() -> Path:
    from pcmem.embedding.build.prepare import prepare_preset

    return prepare_preset("minilm-l6-int8")


def compile_pcmem() -> Path:
    """Compile pcmem's bytecode, as an installed package's is (see above); returns the folder compiled."""
    import pcmem

    folder = Path(pcmem.__file__).resolve().parent
    compileall.compile_dir(folder, quiet=1)
    return folder


def run(entries: int = 300, repeats: int = 7) -> dict:
    python = sys.executable
    compile_pcmem()
    with tempfile.TemporaryDirectory(prefix="pcmem-startup-") as folder:
        store = Path(folder) / "startup.duckdb"
        _build_store(store, entries)
        model_dir = _model_dir()
        cli = [python, "-m", "pcmem", "--db", str(store), "search", "-s", "bench", "--json"]
        samples: dict[str, list[float]] = {k: [] for k in ("python", "floor", "model", "fts", "hybrid", "import")}
        heavy = ""
        for _ in range(repeats):  # interleaved, so load on the machine hits every figure alike
            samples["python"].append(_wall([python, "-c", "pass"])[0])
            samples["floor"].append(_wall(programs.command("duckdb_floor", str(store)))[0])
            model_wall, out = _wall(programs.command("model_floor", str(model_dir), QUERY))
            samples["model"].append(float(out) * 1000)  # session + one query, Python's own start excluded
            samples["fts"].append(_wall([*cli, "--mode", "fts", QUERY])[0])
            samples["hybrid"].append(_wall([*cli, "--mode", "hybrid", QUERY])[0])
            wall, heavy = _wall(programs.command("import_probe", *HEAVY))
            samples["import"].append(wall)
    p50 = {name: _p50(values) for name, values in samples.items()}
    return {
        "entries": entries,
        "repeats": repeats,
        "p50_ms": {name: round(value, 1) for name, value in p50.items()},
        "samples_ms": {name: [round(v, 1) for v in values] for name, values in samples.items()},
        "ratio_fts_vs_floor": round(p50["fts"] / p50["floor"], 2),
        "hybrid_budget_ms": round(p50["floor"] + 1.5 * p50["model"], 1),
        "ratio_hybrid_vs_floor_plus_model": round(p50["hybrid"] / (p50["floor"] + p50["model"]), 2),
        "hybrid_within_target": p50["hybrid"] <= p50["floor"] + 1.5 * p50["model"],
        "import_pcmem_heavy_modules": heavy.split(),
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(run(), indent=2))
