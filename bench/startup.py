"""``pcmem bench startup``: what one cold CLI call costs, against floors measured in the same run.

Agents shell out to ``pcmem search`` once per question, so a call's wall time is mostly Python starting, imports
and opening things, not the search. Each figure is the p50 of ``repeats`` fresh processes on one store:

- ``fts``: ``pcmem search --mode fts`` vs the *floor* — ``python -c`` importing duckdb, opening the same file and
  running one query over the full-text index tables (target, issue #30: ≤ 2× the floor).
- ``hybrid``: ``pcmem search --mode hybrid`` vs the floor plus the *model floor* — a process creating the
  embedder's ONNX Runtime session and embedding one query with onnxruntime and tokenizers directly, minus Python's
  own start (target ≤ floor + 1.5 × model floor).
- ``client_fts``: the same search beside a running owner (an app holding a copy of the store), so the CLI is its
  client over the Unix socket and loads neither DuckDB nor numpy (issue #28's target: 250 ms).
- ``import``: ``python -c "import pcmem"`` and which heavy modules it pulled in (none should be).
- ``fts_import_ms_by_package``: where the owner-less ``fts`` call's import time goes, by package (pcmem's by
  subpackage): each module's own time under ``-X importtime``, the least of ``repeats`` runs (the steadiest figure on
  a loaded machine), summed. What the call costs over the floor is mostly these imports.
- ``client_fts_import_ms_by_package``: the same for the call beside the owner (it sends the owner one request itself:
  no pydantic, no client runtime; :mod:`pcmem.cli.owner_reads`).

Each of ``floor``, ``fts`` and ``client_fts`` is also run once more per round for its CPU time (user + system, every
thread): the ``cpu_`` ratios hold up on a loaded machine, where wall times mostly measure waiting for a core.

pcmem's bytecode is compiled first, as an installed package's is: with ``PYTHONDONTWRITEBYTECODE`` set (or a
read-only checkout) every call would otherwise compile pcmem's modules from source (~80 ms), which the floors,
importing installed packages, never pay.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pcmem_bench import programs

HEAVY = ("fastembed", "onnxruntime", "pyarrow", "textual", "llama_cpp")

QUERY = "Priya moved the Windows installer"

#: One module's line of ``python -X importtime``: its own time and the module (the header line has no numbers).
_IMPORT_LINE = re.compile(r"import time:\s+(?P<own>\d+) \|\s+\d+ \|\s*(?P<module>\S+)$")


def _cpu_ms(command: list[str]) -> float:
    """The user + system CPU time of one run of ``command`` (every thread): steadier than wall time on a machine
    other jobs load, where a process waits for a core as long as it runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _wall(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


def _wall(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # inherits OPENBLAS_NUM_THREADS
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed: {done.stderr.strip()[-500:]}")
    return wall * 1000, done.stdout


def import_ms_by_package(command: list[str], runs: int) -> dict[str, float]:
    """Each module's own import time in ``command`` (a Python command line), the least of ``runs`` runs, summed by
    package (pcmem's by subpackage): ms, largest first."""
    least: dict[str, int] = {}
    for _ in range(runs):
        done = subprocess.run([command[0], "-X", "importtime", *command[1:]], capture_output=True, text=True,
                              check=False)
        for line in done.stderr.splitlines():
            if (match := _IMPORT_LINE.match(line)) is not None:
                least[match["module"]] = min(least.get(match["module"], sys.maxsize), int(match["own"]))
    by_package: Counter[str] = Counter()
    for module, micros in least.items():
        parts = module.split(".")
        by_package[".".join(parts[:2]) if parts[0] == "pcmem" else parts[0]] += micros
    return {package: round(micros / 1000, 1) for package, micros in by_package.most_common()}


def _p50(values: list[float]) -> float:
    return statistics.median(values)


def _build_store(path: Path, entries: int) -> None:
    import pcmem
    from pcmem.types.memory import NewEntry, RememberRequest
    from pcmem_bench.perf import sentences

    with pcmem.open(path) as runtime:  # the default embedder: hybrid needs real vectors
        texts = sentences(entries)
        runtime.memory.for_scope("bench").remember(
            RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=t) for i, t in enumerate(texts))))


@contextlib.contextmanager
def _owned_copy(store: Path) -> Iterator[Path]:
    """A copy of ``store`` held by an owner process (an app with ``pcmem.open``) until the block ends."""
    from pcmem_bench.owner import _start

    owned = store.with_name("owned.duckdb")
    shutil.copyfile(store, owned)  # closed and checkpointed by _build_store: the file alone is the store
    owner = _start("store_holder", str(owned))
    try:
        yield owned
    finally:
        owner.communicate(timeout=60)  # stdin closes: the owner closes the store and exits


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
        figures = ("python", "floor", "model", "fts", "hybrid", "client_fts", "import")
        samples: dict[str, list[float]] = {k: [] for k in figures}
        cpu: dict[str, list[float]] = {k: [] for k in ("floor", "fts", "client_fts")}
        heavy = ""
        with _owned_copy(store) as owned:
            client = [python, "-m", "pcmem", "--db", str(owned), "search", "-s", "bench", "--json", "--mode", "fts",
                      QUERY]
            _measure(samples, cpu, repeats, python, store, model_dir, cli, client)
            heavy = _wall(programs.command("import_probe", *HEAVY))[1]
            imports = import_ms_by_package([*cli, "--mode", "fts", QUERY], repeats)
            client_imports = import_ms_by_package(client, repeats)
    p50 = {name: _p50(values) for name, values in samples.items()}
    return {
        "entries": entries,
        "repeats": repeats,
        "p50_ms": {name: round(value, 1) for name, value in p50.items()},
        "samples_ms": {name: [round(v, 1) for v in values] for name, values in samples.items()},
        "ratio_fts_vs_floor": round(p50["fts"] / p50["floor"], 2),
        "fts_within_target": p50["fts"] <= 2 * p50["floor"],
        "ratio_client_fts_vs_floor": round(p50["client_fts"] / p50["floor"], 2),
        "cpu_p50_ms": {name: round(_p50(values), 1) for name, values in cpu.items()},
        "cpu_ratio_fts_vs_floor": round(_p50(cpu["fts"]) / _p50(cpu["floor"]), 2),
        "cpu_ratio_client_fts_vs_floor": round(_p50(cpu["client_fts"]) / _p50(cpu["floor"]), 2),
        "hybrid_budget_ms": round(p50["floor"] + 1.5 * p50["model"], 1),
        "ratio_hybrid_vs_floor_plus_model": round(p50["hybrid"] / (p50["floor"] + p50["model"]), 2),
        "hybrid_within_target": p50["hybrid"] <= p50["floor"] + 1.5 * p50["model"],
        "import_pcmem_heavy_modules": heavy.split(),
        "fts_import_ms_by_package": imports,
        "client_fts_import_ms_by_package": client_imports,
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _measure(samples: dict[str, list[float]], cpu: dict[str, list[float]], repeats: int, python: str, store: Path,
             model_dir: Path, cli: list[str], client: list[str]) -> None:
    for _ in range(repeats):  # interleaved, so load on the machine hits every figure alike
        samples["python"].append(_wall([python, "-c", "pass"])[0])
        samples["floor"].append(_wall(programs.command("duckdb_floor", str(store)))[0])
        model_wall, out = _wall(programs.command("model_floor", str(model_dir), QUERY))
        samples["model"].append(float(out) * 1000)  # session + one query, Python's own start excluded
        samples["fts"].append(_wall([*cli, "--mode", "fts", QUERY])[0])
        samples["hybrid"].append(_wall([*cli, "--mode", "hybrid", QUERY])[0])
        samples["client_fts"].append(_wall(client)[0])
        samples["import"].append(_wall(programs.command("import_probe", *HEAVY))[0])
        for name, command in (("floor", programs.command("duckdb_floor", str(store))), ("fts", [*cli, "--mode", "fts", QUERY]),
                              ("client_fts", client)):
            cpu[name].append(_cpu_ms(command))


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(run(), indent=2))
