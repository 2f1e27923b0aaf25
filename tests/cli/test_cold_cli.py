"""Issue #30, the cold CLI: what a fresh ``pcmem`` process loads and builds, pinned by module (never by time).

Agents shell out to ``pcmem search``/``remember``/``show`` once per question, so each call pays Python's start and
its imports. These tests check what a call actually loads (``sys.modules`` in a real subprocess) and builds (pydantic
validators): the speed itself is measured by ``pcmem bench startup`` against floors from the same run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner

import pcmem
from pcmem.cli import main
from pcmem.compose.owned import ServedSettings
from pcmem.errors import StoreError

#: Runs one CLI command in this process, then prints which of the watched modules it loaded.
_CLI_PROBE = """
import sys
from pcmem.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    watched = ('duckdb', 'numpy', 'rich', 'fastembed', 'onnxruntime', 'pyarrow', 'textual', 'llama_cpp',
               'pcmem.embedding.presets', 'pcmem.inference.llama_cpp', 'pcmem.decision.port',
               'pcmem.store.duckdb.backend')
    print('loaded:', ','.join(m for m in watched if m in sys.modules))
"""

#: An app that holds the store (its owner) until its stdin closes.
_OWNER = """
import sys, pcmem
with pcmem.open(sys.argv[1]) as runtime:
    print("ready", runtime.owner_pid, flush=True)
    sys.stdin.read()
"""


def _probe(*args: str) -> tuple[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", _CLI_PROBE, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    *output, last = done.stdout.splitlines()
    return "\n".join(output), [m for m in last.removeprefix("loaded:").strip().split(",") if m]


def _seeded(tmp_path):
    path = tmp_path / "cold.duckdb"
    with pcmem.open(path) as runtime:  # the default preset: the store has vectors and an embedding profile
        runtime.memory.for_scope("s").remember("The team deploys on Fridays.", entry_id="deploys")
    return path


def test_help_loads_neither_the_store_nor_numpy_nor_rich():
    _, loaded = _probe("search", "--help")
    assert loaded == []


def test_a_client_of_an_owner_loads_no_duckdb_numpy_rich_or_model(tmp_path):
    """The commands agents call most, beside a running owner: the CLI is a socket client and nothing more."""
    path = _seeded(tmp_path)
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "ready None\n", owner.stderr
        for command in (("search", "-s", "s", "--mode", "fts", "--json", "deploys"),
                        ("search", "-s", "s", "--mode", "hybrid", "--json", "deploys"),
                        ("remember", "-s", "s", "--json", "Releases go out on Tuesdays."),
                        ("show", "-s", "s", "--json", "deploys")):
            output, loaded = _probe("--db", str(path), *command)
            assert loaded == [], (command, loaded)
            assert json.loads(output)  # the owner answered
    finally:
        owner.communicate(timeout=60)
    assert owner.returncode == 0


def test_a_one_shot_owner_builds_no_service_for_clients_that_never_call(tmp_path):
    """A cold full-text search owns the store while it runs; the clients' Memory service (the store's embedder, the
    preset registry) is built only when a client calls, not on every command. It searches once, so it scores
    straight from the index tables in Python (pcmem.store.duckdb.fts_direct): no numpy, no in-process view."""
    path = _seeded(tmp_path)
    output, loaded = _probe("--db", str(path), "search", "-s", "s", "--mode", "fts", "--json", "deploys")
    assert [hit["text"] for hit in json.loads(output)["hits"]] == ["The team deploys on Fridays."]
    assert loaded == ["duckdb", "pcmem.store.duckdb.backend"]


def test_reading_commands_that_own_the_store_load_no_embedder_or_numpy(tmp_path):
    """``show``, ``list``, ``history``, ``changes`` and ``scopes`` never embed: with no owner running they open the
    file themselves, and load neither the store's embedder (its preset code) nor numpy."""
    path = _seeded(tmp_path)
    for command in (("show", "-s", "s", "--json", "deploys"), ("list", "-s", "s", "--json"),
                    ("history", "-s", "s", "--json", "deploys"), ("changes", "-s", "s", "--json"), ("scopes", "--json")):
        output, loaded = _probe("--db", str(path), *command)
        assert "deploys" in output or "Fridays" in output or '"s"' in output, (command, output)
        assert loaded == ["duckdb", "pcmem.store.duckdb.backend"], (command, loaded)


def test_the_clients_service_is_built_by_the_first_request_and_its_failure_is_typed():
    built: list[int] = []

    def failing(settings: object) -> pcmem.SyncMemoryService:
        built.append(1)
        raise StoreError("the embedding profile could not be read")

    handler = ServedSettings(failing)
    assert built == []
    answer = handler({"op": "store.scopes", "scope": None, "args": {}})
    assert answer == {"error": {"type": "StoreError", "message": "the embedding profile could not be read",
                                "fields": {}}}
    assert built == [1]


_BUILT_MODELS = """
import sys
from pydantic import BaseModel
import pcmem.cli.search_commands, pcmem.cli.memory_commands, pcmem.compose.runtime, pcmem.owner.protocol

def models(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from models(sub)

def built():
    return sorted(m.__name__ for m in models(BaseModel) if m.__module__.startswith('pcmem.') and m.__pydantic_complete__)

print(built())
pcmem.types.search.SearchMemoryRequest(query="deploys")
print(built())
"""


def test_models_build_their_validators_on_first_use():
    """Importing the CLI's commands and the runtime builds no pydantic validator; a model builds its own (and the
    models it contains) when first used."""
    done = subprocess.run([sys.executable, "-c", _BUILT_MODELS], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[]", "['SearchMemoryRequest']"]


def test_bench_startup_reports_the_client_path_against_the_floor(tmp_path):
    result = CliRunner().invoke(main, ["bench", "startup", "--entries", "3", "--repeats", "1",
                                       "--out", str(tmp_path / "startup.json")])
    assert result.exit_code == 0, result.output
    assert "client ÷ floor" in result.output
    report = json.loads((tmp_path / "startup.json").read_text())
    assert set(report["p50_ms"]) == {"python", "floor", "model", "fts", "hybrid", "client_fts", "import"}
    assert report["ratio_client_fts_vs_floor"] > 0 and report["ratio_fts_vs_floor"] > 0
    assert isinstance(report["fts_within_target"], bool)
    assert set(report["cpu_p50_ms"]) == {"floor", "fts", "client_fts"} and report["cpu_ratio_client_fts_vs_floor"] > 0
    assert "CPU time (user + system) p50: fts ÷ floor" in result.output
    imports = report["fts_import_ms_by_package"]  # where the owner-less call's imports go: DuckDB and pydantic...
    assert {"duckdb", "pydantic", "click", "pcmem.types"} <= set(imports), imports
    assert "numpy" not in imports  # ...and no numpy (a search made once scores in Python)
    assert "fts call's imports, ms by package" in result.output
    client = report["client_fts_import_ms_by_package"]  # beside the owner: one request, no pydantic, no DuckDB
    assert "click" in client and not {"pydantic", "pydantic_core", "numpy", "duckdb"} & set(client), client
    assert "client fts call's imports, ms by package" in result.output


_FAKE_PLUGIN = """
import sys

print("pydantic plugin loaded", file=sys.stderr)


class Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = Plugin()
"""


def test_the_cli_skips_pydantic_plugin_discovery_unless_the_user_asks(tmp_path):
    """pydantic reads every installed distribution's entry points when the first model validates, looking for
    plugins: a cold CLI call skips that scan; ``PYDANTIC_DISABLE_PLUGINS=`` (empty) loads them as before."""
    site = tmp_path / "site"
    (site / "fakeplug-1.0.dist-info").mkdir(parents=True)
    (site / "fakeplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (site / "fakeplug-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nfake = fakeplug_module:plugin\n")
    (site / "fakeplug_module.py").write_text(_FAKE_PLUGIN)
    command = [sys.executable, "-m", "pcmem", "--db", str(tmp_path / "none.duckdb"), "search", "-s", "s", "x"]
    environment = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    environment["PYTHONPATH"] = str(site)
    skipped = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)
    loaded = subprocess.run(command, capture_output=True, text=True, env={**environment, "PYDANTIC_DISABLE_PLUGINS": ""},
                            timeout=120)
    for done in (skipped, loaded):  # the search validated its request, then found no store
        assert done.returncode != 0 and "no store" in done.stderr, done.stderr
    assert "pydantic plugin loaded" not in skipped.stderr
    assert "pydantic plugin loaded" in loaded.stderr
