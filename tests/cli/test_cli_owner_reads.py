"""Issue #30: ``pcmem search`` and ``pcmem show`` beside a running owner are answered without the library's client
or pydantic (:mod:`pcmem.cli.owner_reads`), and print exactly what the full path prints.

Each case runs twice beside one app that holds the store: the full way (the request model, the client runtime; forced
by setting one of the runtime's settings to its default value, which changes nothing a search does) and the light way
(the frame goes to the owner, its JSON comes back). stdout, stderr and the exit status must be equal, byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import pcmem
from pcmem.cli import owner_reads
from pcmem.errors import InputError, PcmemError
from pcmem.owner.client import Caller, ClientMemoryService
from pcmem.types.search import SearchMemoryRequest

#: An app that holds the store (its owner) until its stdin closes.
_OWNER = """
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    print("ready", flush=True)
    sys.stdin.read()
"""

#: Runs one CLI command in this process, then prints whether pydantic or numpy was loaded.
_PROBE = """
import sys
from pcmem.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    print('loaded:', ','.join(m for m in ('pydantic', 'numpy', 'duckdb') if m in sys.modules))
"""

CASES = [
    ("hits with metadata", ("search", "-s", "notes", "--mode", "fts", "release day")),
    ("hits with metadata, json", ("search", "-s", "notes", "--mode", "fts", "--json", "release day")),
    ("limit", ("search", "-s", "notes", "--mode", "fts", "-n", "1", "--json", "release")),
    ("no hits", ("search", "-s", "notes", "--mode", "fts", "zebra")),
    ("no hits, json", ("search", "-s", "notes", "--mode", "fts", "--json", "zebra")),
    ("an empty scope", ("search", "-s", "nothing-here", "--mode", "fts", "release")),
    ("two scopes", ("search", "-s", "notes", "-s", "other", "--mode", "fts", "--json", "release")),
    ("two scopes, table", ("search", "-s", "notes", "-s", "other", "--mode", "fts", "release")),
    ("hybrid without vectors", ("search", "-s", "notes", "--mode", "hybrid", "--json", "release")),
    ("auto", ("search", "-s", "notes", "release day")),
    ("fusion", ("search", "-s", "notes", "--fusion", "convex", "release day")),
    ("fusion, json", ("search", "-s", "notes", "--fusion", "weighted-rrf", "--json", "release day")),
    ("a blank query", ("search", "-s", "notes", "   ")),
    ("a query with a control character", ("search", "-s", "notes", "a\x01b")),
    ("an invalid scope", ("search", "-s", "   ", "release")),
    ("a scope too long", ("search", "-s", "s" * 300, "--json", "release")),
    ("an invalid second scope", ("search", "-s", "notes", "-s", "", "release")),
    ("a limit out of range", ("search", "-s", "notes", "-n", "51", "release")),
    ("an unknown mode", ("search", "-s", "notes", "--mode", "fuzzy", "release")),
    ("show", ("show", "-s", "notes", "release")),
    ("show, json", ("show", "-s", "notes", "--json", "release")),
    ("show a revised entry at its first revision", ("show", "-s", "notes", "-r", "3", "lunch")),
    ("show a revised entry, json", ("show", "-s", "notes", "--json", "lunch")),
    ("show a retired entry", ("show", "-s", "notes", "old")),
    ("show a forgotten entry", ("show", "-s", "notes", "gone")),
    ("show a missing entry", ("show", "-s", "notes", "nope")),
    ("show in a scope with no memory", ("show", "-s", "nothing-here", "release")),
    ("show an invalid id", ("show", "-s", "notes", "two words")),
    ("show a revision out of range", ("show", "-s", "notes", "-r", "99", "release")),
    ("show a negative revision", ("show", "-s", "notes", "-r", "-1", "release")),
    ("show in an invalid scope", ("show", "-s", "", "release")),
    ("show by citation (the full path parses it)", ("show", "-s", "notes", "--json", "CITATION")),
]


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch):
    """A private runtime folder per test (short: a Unix socket path has ~100 bytes), inherited by subprocesses."""
    folder = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("PCMEM_LOCK_TIMEOUT", "5")
    for name in ("PCMEM_SEARCH_FUSION", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED", "PCMEM_DB"):
        monkeypatch.delenv(name, raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A store with hits carrying metadata, a second scope, and an entry of another kind (the first copy is kept
    for searches with no owner)."""
    folder = tmp_path_factory.mktemp("owner-search")
    alone = folder / "alone.duckdb"
    with pcmem.open(alone, embedder=None) as runtime:
        notes = runtime.memory.for_scope("notes")
        notes.remember("Release day is Tuesday; the release train leaves at noon.", entry_id="release",
                       metadata={"source": "standup", "weight": 0.5, "tags": ["ops", "ünïcode"]})
        notes.remember("The release checklist lives in the wiki.", entry_id="checklist", kind="decision")
        notes.remember("Lunch is at one.", entry_id="lunch")
        notes.revise("lunch", text="Lunch is at half past one.", expected_version=1)
        notes.remember("An old rule.", entry_id="old")
        notes.retire("old", expected_version=1)
        notes.remember("A note to forget.", entry_id="gone")
        notes.forget("gone")
        runtime.memory.for_scope("other").remember("Another release note, from the other team.", entry_id="o1")
        cited = notes.get_entry("release").citation
    (folder / "citation").write_text(str(cited))
    held = folder / "held.duckdb"
    shutil.copyfile(alone, held)
    return alone, held


#: A runtime setting at its default value: the search takes the full path (see owner_reads) and does the same.
_FULL_WAY = {"POWERCONTEXT_SERVER_INFERENCE_GENERATION_MAX_REQUESTS": "2"}


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pcmem", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def _holding(path: Path) -> subprocess.Popen[str]:
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdout.readline() == "ready\n", owner.stderr
    return owner


def test_answered_by_the_owner_prints_what_the_full_path_prints(stores):
    _, held = stores
    owner = _holding(held)
    try:
        citation = (held.parent / "citation").read_text()
        cases = [(name, tuple(citation if arg == "CITATION" else arg for arg in args)) for name, args in CASES]
        full = {name: _run("--db", str(held), *args, env=_FULL_WAY) for name, args in cases}
        light = {name: _run("--db", str(held), *args) for name, args in cases}
    finally:
        owner.communicate(timeout=60)
    for name, _ in CASES:
        assert (light[name].returncode, light[name].stdout, light[name].stderr) == \
            (full[name].returncode, full[name].stdout, full[name].stderr), name
        assert "Traceback" not in light[name].stderr and len(light[name].stderr.splitlines()) <= 1, name
    assert '"source": "standup"' in full["hits with metadata, json"].stdout  # the cases say what they claim
    assert "no hits for 'zebra'" in full["no hits"].stdout
    assert all(full[name].returncode != 0 for name in ("a blank query", "an invalid scope", "a scope too long",
                                                       "an invalid second scope", "a limit out of range",
                                                       "show a forgotten entry", "show a missing entry",
                                                       "show an invalid id", "show a revision out of range"))
    assert "half past one" in full["show a revised entry, json"].stdout and "one." in full[
        "show a revised entry at its first revision"].stdout
    assert "'tags': ['ops', 'ünïcode']" in full["show"].stdout and '"entry_id": "release"' in full[
        "show by citation (the full path parses it)"].stdout


def test_search_and_show_beside_an_owner_load_neither_pydantic_nor_numpy(stores):
    """Fails on the code before: the client runtime is built from pydantic models (and so was the CLI's request)."""
    _, held = stores
    owner = _holding(held)
    try:
        for args in (("search", "-s", "notes", "--mode", "fts", "--json", "release"),
                     ("search", "-s", "notes", "--mode", "fts", "release"),
                     ("search", "-s", "notes", "-s", "other", "release"),
                     ("show", "-s", "notes", "--json", "release"),
                     ("show", "-s", "notes", "release")):
            done = subprocess.run([sys.executable, "-c", _PROBE, "--db", str(held), *args], capture_output=True,
                                  text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            assert "release" in done.stdout
            assert done.stdout.splitlines()[-1].strip() == "loaded:", (args, done.stdout.splitlines()[-1])
    finally:
        owner.communicate(timeout=60)


def test_options_the_models_check_take_the_full_path(stores):
    """Filters and the runtime's settings are validated by the models: with them set, the full client runs (and
    refuses a bad value the way it always did)."""
    _, held = stores
    owner = _holding(held)
    try:
        configured = _run("--db", str(held), "search", "-s", "notes", "release", env={"PCMEM_SEARCH_FUSION": "bogus"})
        kinds = _run("--db", str(held), "search", "-s", "notes", "--kind", "decision", "--json", "release")
    finally:
        owner.communicate(timeout=60)
    assert configured.returncode != 0 and configured.stderr.startswith("pcmem: error: runtime config: ")
    assert len(configured.stderr.splitlines()) == 1
    assert kinds.returncode == 0 and '"entry_id": "checklist"' in kinds.stdout
    assert '"entry_id": "release"' not in kinds.stdout


@pytest.mark.parametrize("query", ["", "   ", "\u200b", "a\x00b", "x" * 8193, "é" * 4097, 5, None, b"bytes"])
def test_the_light_request_refuses_what_the_model_refuses(query):
    """One rule, two readers: the same bad query gets the same typed error and the same one-line message."""
    with pytest.raises(PcmemError) as by_model:
        SearchMemoryRequest(query=query)
    with pytest.raises(PcmemError) as light:
        owner_reads.search_request(query, 10, "fts", None)  # type: ignore[arg-type]
    assert type(light.value) is type(by_model.value) is InputError
    assert str(light.value) == str(by_model.value) and "\n" not in str(light.value)


class _Captured(Exception):
    pass


class _Recorder:
    """A link that keeps the frame a client would send, and answers nothing."""

    def __init__(self) -> None:
        self.frames: list[dict] = []

    def call(self, request: dict) -> dict:
        self.frames.append(request)
        raise _Captured

    def close(self) -> None:
        pass


@pytest.mark.parametrize("scopes", [("notes",), ("notes", "other")])
@pytest.mark.parametrize(("mode", "fusion", "limit"), [("fts", None, 10), ("auto", "convex", 3), ("hybrid", "rrf", 50)])
def test_the_light_frame_is_the_frame_the_client_sends(scopes, mode, fusion, limit):
    """The frame built here equals what :class:`pcmem.owner.client.Caller` sends for the CLI's call, so the owner
    cannot tell them apart (a field added to the request model would show here)."""
    link = _Recorder()
    memory = ClientMemoryService(Caller(link, lambda: link, None))
    request = SearchMemoryRequest(query=" Release  day\u0301 ", limit=limit, mode=mode, fusion=fusion)
    with pytest.raises(_Captured):
        if len(scopes) == 1:
            memory.for_scope(scopes[0]).search(request, reranker="default", progress=None)
        else:
            memory.search(request, scopes=scopes, reranker="default", progress=None)
    light = owner_reads.search_frame(scopes, owner_reads.search_request(" Release  day\u0301 ", limit, mode, fusion))
    assert light == link.frames[0]


@pytest.mark.parametrize("revision", [None, 2])
def test_the_light_entry_frame_is_the_frame_the_client_sends(revision):
    link = _Recorder()
    memory = ClientMemoryService(Caller(link, lambda: link, None))
    with pytest.raises(_Captured):
        memory.for_scope("notes").get_entry("release", revision)  # as pcmem show calls it
    assert owner_reads.entry_frame("notes", "release", revision) == link.frames[0]


def test_a_reranked_table_printed_from_the_pages_json_keeps_each_hits_coarse_rank(tmp_path):
    """The table is printed from the page's JSON on both paths; a reranked hit's coarse rank is found by its citation
    in the trace's pool (it was found by object identity when the table was printed from the model)."""
    path = tmp_path / "rerank.duckdb"
    with pcmem.open(path) as runtime:  # the default preset: the embedding rerank needs vectors
        scope = runtime.memory.for_scope("s")
        for number, text in enumerate(["The desktop app ships on Fridays.", "Mobile builds go out on Mondays.",
                                       "The desktop installer is signed before shipping.", "Lunch is at noon."]):
            scope.remember(text, entry_id=f"e{number}")
    search = ("--db", str(path), "search", "-s", "s", "--mode", "fts", "--rerank", "embedding", "-n", "2",
              "desktop app shipping")
    page = json.loads(_run(*search, "--json").stdout)
    table = _run(*search)
    assert table.returncode == 0, table.stderr
    pool = [hit["citation"]["entry_version_id"] for hit in page["rerank"]["candidates"]]
    rows = [line.split("│") for line in table.stdout.splitlines() if line.count("│") == 5]
    assert [(row[0].strip(), row[1].strip(), row[4].strip()) for row in rows] == [
        (str(rank), str(pool.index(hit["citation"]["entry_version_id"]) + 1), hit["citation"]["entry_id"])
        for rank, hit in enumerate(page["hits"], start=1)]
    assert f"rerank {page['rerank']['policy_id']}: kept 2 of {len(pool)}" in table.stdout
