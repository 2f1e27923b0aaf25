"""The public API: async in the RFC's shape, a short root namespace, and no heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pcmem
from pcmem import ListRequest, NewEntry, RememberRequest, RetireRequest


async def test_async_api_in_the_rfc_shape(db_path):
    async with pcmem.open_async(db_path) as runtime:
        project = runtime.memory.for_scope("project")
        written = await project.remember(RememberRequest(entries=(NewEntry(text="async hello", kind="note"),)))
        await project.retire(RetireRequest(entry_id=written.citations[0].entry_id, expected_revision=1))
        page = await project.list(ListRequest(state="all"))
        assert [(e.entry.text, e.state) for e in page.entries] == [("async hello", "retired")]
        assert (await project.get(written.citations[0])).entry.kind == "note"
        assert [s.scope for s in await runtime.memory.scopes()] == ["project"]
        assert len((await project.history(written.citations[0].entry_id)).events) == 2


async def test_open_async_can_be_awaited(db_path):
    runtime = await pcmem.open_async(db_path)
    try:
        assert await runtime.memory.for_scope("x").head() is None
    finally:
        await runtime.close()


def test_root_namespace_is_sorted_and_complete():
    assert pcmem.__all__ == sorted(pcmem.__all__)
    for name in pcmem.__all__:
        assert hasattr(pcmem, name), name


def test_import_pcmem_loads_no_ui_or_llm_code():
    """STYLE §3 and §8: importing pcmem and its CLI loads neither Textual, the TUI package, the benchmarks nor llama.cpp (the
    import-linter contracts check the static imports; this checks what actually loads)."""
    probe = (
        "import sys, pcmem, pcmem.cli\n"
        "heavy = [m for m in ('textual', 'llama_cpp', 'pcmem_tui', 'pcmem_bench') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_python_dash_m_pcmem_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pcmem", "--db", str(tmp_path / "m.duckdb"), "remember", "-s", "s", "x"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "pcmem", "--db", str(tmp_path / "m.duckdb"), "scopes", "--json"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    assert [scope["scope"] for scope in json.loads(result.stdout)] == ["s"]


def test_import_and_full_text_search_load_no_model_or_arrow_code(tmp_path):
    """Issue 20 (cold CLI): importing pcmem and its CLI, opening a store with vectors and searching full text
    loads none of fastembed, onnxruntime, pyarrow, textual, llama_cpp — each costs 0.1–1 s per CLI call."""
    path = tmp_path / "cold.duckdb"
    with pcmem.open(path) as runtime:
        runtime.memory.for_scope("s").remember("The team deploys on Fridays.")
    probe = (
        "import sys, pcmem, pcmem.cli\n"
        "heavy = ('fastembed', 'onnxruntime', 'pyarrow', 'textual', 'llama_cpp')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
        "with pcmem.open(sys.argv[1]) as runtime:\n"
        "    hits = runtime.memory.for_scope('s').search(pcmem.SearchMemoryRequest(query='deploys', mode='fts')).hits\n"
        "print(len(hits), ','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["", "1 "]


_CLI_PROBE = """
import sys
from pcmem.cli import main
main(sys.argv[1:], standalone_mode=False)
heavy = ('fastembed', 'onnxruntime', 'pyarrow', 'textual', 'llama_cpp', 'numpy', 'rich', 'asyncio')
print('loaded:', ','.join(m for m in heavy if m in sys.modules))
"""


def test_cli_searches_load_only_what_their_mode_needs(tmp_path):
    """Issue 20 (cold CLI): `pcmem search --mode fts --json` loads no model, arrow, rich or asyncio code, and no numpy
    either (a search made once scores its terms' postings in Python, issue #30); `--mode hybrid` with a preset
    embeds the query on onnxruntime directly, never importing fastembed."""
    path = tmp_path / "cold.duckdb"
    with pcmem.open(path) as runtime:  # the default preset: real vectors
        runtime.memory.for_scope("s").remember("The team deploys on Fridays.")
    loaded = {}
    for mode in ("fts", "hybrid"):
        out = subprocess.run([sys.executable, "-c", _CLI_PROBE, "--db", str(path), "search", "-s", "s", "--mode", mode,
                              "--json", "deploys"], capture_output=True, text=True, check=True).stdout
        *page, last = out.splitlines()
        assert json.loads("\n".join(page))["mode"] == mode and len(json.loads("\n".join(page))["hits"]) == 1
        loaded[mode] = [name for name in last.removeprefix("loaded: ").split(",") if name]
    assert loaded == {"fts": [], "hybrid": ["onnxruntime", "numpy"]}
