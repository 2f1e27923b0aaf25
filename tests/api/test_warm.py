"""``runtime.warm(scopes=...)`` (issue #42): the model and each scope's search views load before the user's first
search, with progress and cancellation; awaited, it leaves the event loop free; in a client, the owner warms."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fakes import HashEmbedder

import pcmem
from pcmem import InputError, NewEntry, RememberRequest
from pcmem.compose.owned import Rerankers
from pcmem.owner.client import Caller, ClientMemoryService, LocalLink
from pcmem.owner.operations import Dispatcher
from pcmem.store.duckdb import fts_cache, vector_cache


class CountingEmbedder(HashEmbedder):
    """Counts the queries it embeds; ``gate``: each query first waits for it (a model that takes its time)."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        super().__init__("test/hash-words", 64)
        self.queries: list[str] = []
        self.gate = gate
        self.entered = threading.Event()  # set when a query starts (before it waits for the gate)

    def embed_query(self, text: str):
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(30), "the gate was never opened"
        self.queries.append(text)
        return super().embed_query(text)


@pytest.fixture
def loads(monkeypatch) -> dict[str, list[str]]:
    """The scopes' views built from the file, by channel (artifact ids)."""
    built: dict[str, list[str]] = {"fts": [], "vector": []}

    def counted(module, channel):
        load = module._load

        def counting(db, memory, *args):
            built[channel].append(memory.artifact_id)
            return load(db, memory, *args)
        monkeypatch.setattr(module, "_load", counting)
    counted(fts_cache, "fts")
    counted(vector_cache, "vector")
    return built


def _fill(path: Path, embedder, scopes=("notes", "other")) -> None:
    with pcmem.open(path, embedder=embedder) as runtime:
        for scope in scopes:
            runtime.memory.for_scope(scope).remember(RememberRequest(entries=tuple(
                NewEntry(text=f"{scope} note {i}: the release moved to Tuesday") for i in range(20))))


def test_after_warm_the_first_search_builds_no_view(db_path, loads):
    embedder = CountingEmbedder()
    _fill(db_path, embedder)
    with pcmem.open(db_path, embedder=embedder) as runtime:
        embedder.queries.clear()
        report = runtime.warm(scopes=["notes"])
        assert report == pcmem.WarmReport(model="test/hash-words", scopes=("notes",))
        assert embedder.queries == ["warm up"]  # the model: one query embedding
        assert (len(loads["fts"]), len(loads["vector"])) == (1, 1)
        page = runtime.memory.for_scope("notes").search("when is the release", mode="hybrid")
        assert page.hits and page.mode == "hybrid"
        assert (len(loads["fts"]), len(loads["vector"])) == (1, 1)  # the search read no view from the file


def test_progress_is_reported_step_by_step_and_empty_scopes_are_named(db_path, loads):
    embedder = CountingEmbedder()
    _fill(db_path, embedder)
    seen: list[tuple[int, int]] = []
    with pcmem.open(db_path, embedder=embedder) as runtime:
        report = runtime.warm(scopes=["notes", "nobody", "other", "notes"], progress=lambda *step: seen.append(step))
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]  # the model, then each scope once
    assert report.scopes == ("notes", "other") and report.empty_scopes == ("nobody",) and not report.cancelled
    assert len(loads["fts"]) == len(loads["vector"]) == 2


def test_a_cancel_stops_warm_before_its_next_step(db_path, loads):
    embedder = CountingEmbedder()
    _fill(db_path, embedder)
    cancel = threading.Event()

    def progress(done: int, total: int) -> None:
        if done == 2:  # the model and the first scope are loaded
            cancel.set()

    with pcmem.open(db_path, embedder=embedder) as runtime:
        report = runtime.warm(scopes=["notes", "other"], progress=progress, cancel=cancel)
    assert report.cancelled and report.scopes == ("notes",)
    assert len(loads["fts"]) == 1  # "other" was never read


def test_warm_refuses_bad_scope_names_before_loading_anything(db_path, loads):
    embedder = CountingEmbedder()
    with pcmem.open(db_path, embedder=embedder) as runtime:
        with pytest.raises(InputError, match="list of scope names"):
            runtime.warm(scopes="notes")
        with pytest.raises(InputError):
            runtime.warm(scopes=["notes", "   "])
    assert embedder.queries == [] and loads == {"fts": [], "vector": []}


def test_without_an_embedder_warm_loads_the_full_text_view_only(db_path, loads):
    _fill(db_path, CountingEmbedder())
    with pcmem.open(db_path, embedder=None) as runtime:
        report = runtime.warm(scopes=["notes"])
    assert report.model is None and report.scopes == ("notes",)
    assert (len(loads["fts"]), len(loads["vector"])) == (1, 0)


def test_the_async_warm_leaves_the_loop_free_and_reports_progress_on_it(db_path, loads):
    """The model load (a gated embedder) waits for a coroutine on the loop to open the gate: warm running on the
    loop would never let that coroutine run (the gate's wait would fail)."""
    _fill(db_path, CountingEmbedder())
    gate = threading.Event()
    embedder = CountingEmbedder(gate)
    on: list[int] = []

    async def main() -> pcmem.WarmReport:
        loop_thread = threading.get_ident()
        async with pcmem.open_async(db_path, embedder=embedder) as runtime:
            warming = asyncio.create_task(runtime.warm(
                scopes=["notes"], progress=lambda done, total: on.append(threading.get_ident() == loop_thread)))
            await asyncio.sleep(0)  # warm starts, and waits for the model in its worker
            gate.set()  # the loop runs meanwhile
            return await warming

    report = asyncio.run(main())
    assert report.scopes == ("notes",) and embedder.queries == ["warm up"]
    assert on == [True, True, True]  # (0, 2), (1, 2), (2, 2), each called on the loop


def test_cancelling_the_async_warm_stops_its_worker_at_the_next_step(db_path, loads):
    _fill(db_path, CountingEmbedder())
    gate = threading.Event()
    embedder = CountingEmbedder(gate)
    finished = threading.Event()

    async def main() -> None:
        async with pcmem.open_async(db_path, embedder=embedder) as runtime:
            warm = runtime.sync.warm

            def watched(*args, **kwargs):  # the worker's own call: it tells when it is over
                try:
                    return warm(*args, **kwargs)
                finally:
                    finished.set()
            runtime.sync.warm = watched  # type: ignore[method-assign]
            warming = asyncio.create_task(runtime.warm(scopes=["notes", "other"]))
            assert await asyncio.to_thread(embedder.entered.wait, 30)  # the worker is in the model step
            warming.cancel()
            with pytest.raises(asyncio.CancelledError):
                await warming
            gate.set()  # the model step finishes in the background
            assert await asyncio.to_thread(finished.wait, 30)
            assert embedder.queries == ["warm up"] and loads == {"fts": [], "vector": []}  # no scope step followed

    asyncio.run(main())


def test_a_client_s_warm_runs_in_the_owner(db_path, loads):
    """The client's warm crosses the owner protocol (store.warm): the owner's views load, the client loads nothing."""
    embedder = CountingEmbedder()
    _fill(db_path, embedder)
    with pcmem.open(db_path, embedder=embedder) as owner:
        link = LocalLink(Dispatcher(owner.memory, Rerankers()), lambda: None)
        client = ClientMemoryService(Caller(link, lambda: link, None))
        assert client.warm(["notes"]) == pcmem.WarmReport(model="test/hash-words", scopes=("notes",))
        assert (len(loads["fts"]), len(loads["vector"])) == (1, 1)
        owner.memory.for_scope("notes").search("release", mode="hybrid")
        assert (len(loads["fts"]), len(loads["vector"])) == (1, 1)


_OWNER = """
import sys, pcmem
with pcmem.open(sys.argv[1]) as runtime:
    print("ready", flush=True)
    sys.stdin.read()
"""


def test_a_client_process_asks_the_owner_process_to_warm(db_path):
    """Real processes: the owner loads the store's MiniLM model for the client; the client imports no model."""
    with pcmem.open(db_path) as runtime:  # the default embedder: the owner's warm loads it
        runtime.memory.for_scope("notes").remember("The release moved to Tuesday.")
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(db_path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        client = subprocess.run([sys.executable, "-c", (
            "import sys, pcmem\n"
            f"with pcmem.open({str(db_path)!r}) as runtime:\n"
            "    steps = []\n"
            "    report = runtime.warm(scopes=['notes'], progress=lambda *step: steps.append(step))\n"
            "    print(runtime.owner_pid is not None, report.model, report.scopes, steps,"
            " 'onnxruntime' in sys.modules)\n")], capture_output=True, text=True, timeout=300)
        assert client.returncode == 0, client.stderr[-2000:]
        assert client.stdout.split(" ", 2)[:2] == ["True", "sentence-transformers/all-MiniLM-L6-v2@int8"]
        assert client.stdout.strip().endswith("('notes',) [(0, 2), (1, 2), (2, 2)] False")
    finally:
        owner.communicate(timeout=60)
