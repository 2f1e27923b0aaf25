"""The processes the benchmarks and campaigns start are real modules (pcmem_bench.programs), which ruff and mypy
check, not program texts handed to ``python -c``; each still does its job when run as the benchmarks run it."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

import pcmem
from pcmem.embedding.build.prepare import prepare_preset
from pcmem_bench import chaos, programs, startup

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _program_texts(path: Path) -> list[str]:
    """String constants of ``path`` that are Python programs of several lines importing something (docstrings
    aside; a one-line text such as a table heading "import pcmem" is not a program)."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value.strip() \
                and id(node) not in docstrings:
            try:
                program = ast.parse(node.value)
            except (SyntaxError, ValueError):  # not Python, or not encodable (hostile-input samples)
                continue
            if any(isinstance(statement, ast.Import | ast.ImportFrom) for statement in ast.walk(program)):
                found.append(node.value.strip().splitlines()[0])
    return found


def test_no_bench_module_holds_a_program_in_a_string():
    texts = {str(path.relative_to(BENCH)): _program_texts(path) for path in sorted(BENCH.rglob("*.py"))}
    assert {name: found for name, found in texts.items() if found} == {}


def test_a_program_is_named_by_its_module():
    assert programs.command("killed_writer", "a", "b")[1:] == [str(programs.FOLDER / "killed_writer.py"), "a", "b"]
    with pytest.raises(ValueError, match="no bench program named 'killed-writer'"):
        programs.command("killed-writer")


def test_the_chaos_workers_race_on_one_store_and_lose_nothing(tmp_path):
    tally = chaos.processes_scenario(tmp_path / "p.duckdb", ops=6)
    assert tally.ok and tally.operations == 18 and tally.acknowledged > 0, tally.as_dict()


def test_a_killed_embedder_switch_keeps_every_entry(tmp_path):
    tally = chaos.reindex_trial(tmp_path / "r.duckdb", seed=1, entries=40)
    assert tally.ok and tally.found == 40, tally.as_dict()


def test_the_owner_bench_processes_hold_and_load_a_store(tmp_path):
    path, stop = tmp_path / "o.duckdb", tmp_path / "stop"
    holder = subprocess.Popen(programs.command("store_holder", str(path)), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
    loader = subprocess.Popen(programs.command("store_loader", str(path), "p0", str(stop), "auto"),
                              stdout=subprocess.PIPE, text=True)
    assert loader.stdout is not None and loader.stdout.readline() == "ready\n"
    assert loader.stdout.readline() == "ack p0-0\n"  # written through the holder, which owns the file
    stop.touch()
    acknowledged = [line.split()[1] for line in [loader.stdout.readline(), *loader.communicate(timeout=120)[0]
                                                 .splitlines()] if line.startswith("ack")]
    holder.communicate("", timeout=120)
    assert (loader.returncode, holder.returncode) == (0, 0)
    with pcmem.open(path, embedder=None) as runtime:
        stored = {e.entry.entry_id for e in runtime.memory.for_scope("load").list(pcmem.ListRequest()).entries}
    assert {"p0-0", *acknowledged} <= stored


def test_the_startup_floors_run_and_the_import_probe_names_what_loaded(tmp_path):
    path = tmp_path / "s.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("bench").remember("Priya moved the Windows installer")
    subprocess.run(programs.command("duckdb_floor", str(path)), check=True, timeout=120)
    model = subprocess.run(programs.command("model_floor", str(prepare_preset("minilm-l6-int8")), "a query"),
                           capture_output=True, text=True, check=True, timeout=120)
    assert float(model.stdout) > 0
    probe = subprocess.run(programs.command("import_probe", "pcmem", "no_such_module"), capture_output=True, text=True,
                           check=True, timeout=120)
    assert probe.stdout.split() == ["pcmem"]


def test_startup_compiles_the_pcmem_package_it_measures():
    """Not the folder above the bench package: since the bench left pcmem, that is the whole source tree."""
    assert startup.compile_pcmem() == Path(pcmem.__file__).resolve().parent
