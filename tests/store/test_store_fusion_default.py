"""Issue 31: a default fusion kept in the store itself — set from the CLI or the library, read by every process and
every surface, below a search's own choice and the runtime's ``PCMEM_SEARCH_FUSION``, and named on the page.

Real stores throughout: DuckDB files (and a seekdb database where one is available), real subprocesses for the CLI
and for a second process that reaches the store through its owner.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

import pcmem
from pcmem import InputError, NewEntry, RememberRequest, RuntimeConfig
from pcmem.compose.backends import open_backend
from pcmem.errors import StoreFormatError
from pcmem.testing import HashEmbedder
from pcmem.types.search import SearchMemoryRequest

TEXTS = ["Melanie painted a sunrise over the lake last summer.", "The lake was calm at sunrise.",
         "Caroline went to the support group on Tuesday.", "A sunrise painting hangs in Melanie's kitchen."]
QUERY = "Melanie sunrise lake"


@pytest.fixture
def runtime_dir(monkeypatch):
    """A private runtime folder (the owner's socket lives there), inherited by the subprocesses."""
    folder = Path(tempfile.mkdtemp(prefix="pcf", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("PCMEM_LOCK_TIMEOUT", "5")
    monkeypatch.delenv("PCMEM_SEARCH_FUSION", raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def open_store(path, fusion: str | None = None):
    return pcmem.open(path, embedder=HashEmbedder(), config=RuntimeConfig(memory_search_fusion=fusion))


def seeded(path):
    with open_store(path) as runtime:
        runtime.memory.for_scope("s").remember(RememberRequest(
            entries=tuple(NewEntry(entry_id=f"e{i}", text=text) for i, text in enumerate(TEXTS))))
    return path


def cli(path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("engine", ["duckdb", "seekdb"])
def test_the_default_is_kept_in_the_store_and_read_back_after_reopening(engine, tmp_path, request):
    target = tmp_path / "m.duckdb" if engine == "duckdb" else request.getfixturevalue("seekdb_url")
    backend = open_backend(target)
    try:
        assert backend.search_fusion_default() is None
        backend.set_search_fusion_default("convex")
        assert backend.search_fusion_default() == "convex"
    finally:
        backend.close()
    backend = open_backend(target)
    try:
        assert backend.search_fusion_default() == "convex"  # from the store, not from this process
        backend.set_search_fusion_default(None)
    finally:
        backend.close()
    backend = open_backend(target)
    try:
        assert backend.search_fusion_default() is None
    finally:
        backend.close()


def test_precedence_request_then_runtime_then_store_then_contract_and_the_page_says_which(tmp_path):
    path = seeded(tmp_path / "m.duckdb")
    with open_store(path) as runtime:
        memory = runtime.memory.for_scope("s")
        contract = memory.search(SearchMemoryRequest(query=QUERY, mode="hybrid"))
        convex = memory.search(SearchMemoryRequest(query=QUERY, mode="hybrid", fusion="convex"))
        assert (contract.fusion, contract.fusion_source) == ("rrf", "contract")
        assert (convex.fusion, convex.fusion_source) == ("convex", "request")
        shown = runtime.memory.set_search_fusion("convex")
        assert (shown.fusion, shown.source, shown.store_default) == ("convex", "store", "convex")
        stored = memory.search(SearchMemoryRequest(query=QUERY, mode="hybrid"))
        several = runtime.memory.search(SearchMemoryRequest(query=QUERY, mode="hybrid"), scopes=["s", "other"])
        asked_rrf = memory.search(SearchMemoryRequest(query=QUERY, mode="hybrid", fusion="rrf"))
    assert (stored.fusion, stored.fusion_source) == ("convex", "store") and stored.hits == convex.hits
    assert (several.fusion, several.fusion_source) == ("convex", "store")
    assert (asked_rrf.fusion, asked_rrf.fusion_source) == ("rrf", "request") and asked_rrf.hits == contract.hits
    with open_store(path, fusion="rrf") as runtime:  # the runtime's PCMEM_SEARCH_FUSION overrides the store's
        page = runtime.memory.for_scope("s").search(SearchMemoryRequest(query=QUERY, mode="hybrid"))
        shown = runtime.memory.search_fusion()
    assert (page.fusion, page.fusion_source) == ("rrf", "runtime") and page.hits == contract.hits
    assert (shown.fusion, shown.source, shown.store_default) == ("rrf", "runtime", "convex")
    with open_store(path) as runtime:  # a later process, no runtime choice: the store's
        page = runtime.memory.for_scope("s").search(SearchMemoryRequest(query=QUERY, mode="hybrid"))
        assert (page.fusion, page.fusion_source) == ("convex", "store")
        assert runtime.memory.set_search_fusion(None).source == "contract"


def test_an_unknown_name_is_an_input_error_and_changes_nothing(tmp_path):
    path = seeded(tmp_path / "m.duckdb")
    with open_store(path) as runtime:
        runtime.memory.set_search_fusion("convex")
        with pytest.raises(InputError, match="unknown fusion 'borda'"):
            runtime.memory.set_search_fusion("borda")  # type: ignore[arg-type]
        assert runtime.memory.search_fusion().store_default == "convex"


def test_a_store_naming_a_fusion_this_pcmem_does_not_know_is_a_one_line_store_error(tmp_path, runtime_dir):
    path = seeded(tmp_path / "m.duckdb")
    with duckdb.connect(str(path)) as db:  # a newer pcmem's default, or an edited file
        db.execute("INSERT INTO pcmem_meta VALUES ('search_fusion', 'borda')")
    with open_store(path) as runtime, pytest.raises(StoreFormatError, match="'borda'"):
        runtime.memory.for_scope("s").search(SearchMemoryRequest(query=QUERY))
    found = cli(path, "search", "-s", "s", "lake")
    assert found.returncode != 0 and "Traceback" not in found.stderr
    assert found.stderr.strip().count("\n") == 0 and "pcmem fusion set" in found.stderr
    assert cli(path, "fusion", "set", "rrf").returncode == 0  # the way out the message names
    assert json.loads(cli(path, "search", "-s", "s", "lake", "--json").stdout)["fusion_source"] == "store"


def test_the_cli_sets_shows_and_unsets_it_and_a_later_process_searches_with_it(tmp_path, runtime_dir):
    path = seeded(tmp_path / "m.duckdb")
    shown = cli(path, "fusion")
    assert shown.returncode == 0 and "searches fuse with rrf (the contract's" in shown.stdout, shown.stderr
    assert json.loads(cli(path, "fusion", "set", "convex", "--json").stdout) == {
        "fusion": "convex", "source": "store", "store_default": "convex"}
    page = json.loads(cli(path, "search", "-s", "s", QUERY, "--json").stdout)
    assert (page["fusion"], page["fusion_source"]) == ("convex", "store")
    text = " ".join(cli(path, "search", "-s", "s", QUERY).stdout.split())
    assert "the store's default (`pcmem fusion`): a non-contract option" in text
    overridden = cli(path, "fusion", env={**_env(), "PCMEM_SEARCH_FUSION": "rrf"})
    assert "searches fuse with rrf ($PCMEM_SEARCH_FUSION" in overridden.stdout
    assert "the store's default: convex" in overridden.stdout
    assert json.loads(cli(path, "fusion", "unset", "--json").stdout)["source"] == "contract"
    assert json.loads(cli(path, "search", "-s", "s", QUERY, "--json").stdout)["fusion"] == "rrf"
    bad = cli(path, "fusion", "set", "borda")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    missing = cli(tmp_path / "none.duckdb", "fusion", "set", "convex")
    assert missing.returncode != 0 and "no store at" in missing.stderr and not (tmp_path / "none.duckdb").exists()


def test_a_default_set_by_another_process_through_the_owner_applies_to_the_owners_next_search(tmp_path,
                                                                                              runtime_dir):
    path = seeded(tmp_path / "m.duckdb")
    with open_store(path) as owner:  # this process owns the file; the CLI below is its client
        memory = owner.memory.for_scope("s")
        assert memory.search(SearchMemoryRequest(query=QUERY, mode="hybrid")).fusion == "rrf"
        set_elsewhere = cli(path, "fusion", "set", "convex", "--json")
        assert set_elsewhere.returncode == 0, set_elsewhere.stderr
        page = memory.search(SearchMemoryRequest(query=QUERY, mode="hybrid"))
        assert (page.fusion, page.fusion_source) == ("convex", "store")
        from_client = json.loads(cli(path, "search", "-s", "s", QUERY, "--json").stdout)
        assert (from_client["fusion"], from_client["fusion_source"]) == ("convex", "store")


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)
