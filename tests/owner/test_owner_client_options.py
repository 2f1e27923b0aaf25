"""A client loses nothing its app asked for (#39, item 4): each ``pcmem.open`` option works in a client of another
process's owner as it does in the owner, or is refused at open with one line. The retrievers and the async runtime
take a client runtime too.

One real owner process with the real MiniLM embedder per test module; the clients are this test process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

import pcmem
from pcmem.testing import HashEmbedder
from pcmem.types.decision import DecisionOutcome, DecisionRequest, DecisionResult
from pcmem.types.rerank import MemoryRerankDecision

NOTES = ("The release moves to Friday after the installer check.", "Priya prefers tea in the afternoon.",
         "The release notes go out on Monday.", "The installer check runs every night.",
         "Friday releases need two reviewers.", "Tea is in the second kitchen.")

#: An app that owns the store (the bundled embedder: hybrid search works), plain options: rrf, candidate limit 30.
OWNER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1]) as runtime:
    scope = runtime.memory.for_scope("p")
    if scope.head() is None:
        scope.remember(pcmem.RememberRequest(entries=tuple(pcmem.NewEntry(text=t, entry_id=f"n{i}")
                                                           for i, t in enumerate(sys.argv[2:]))))
    print("ready", flush=True)
    sys.stdin.read()
"""


@pytest.fixture(scope="module")
def owned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    path = tmp_path_factory.mktemp("client-options") / "store.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(path), *NOTES], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdout.readline() == "ready\n", owner.stderr
    yield path, owner.pid
    _, err = owner.communicate(timeout=60)
    assert owner.returncode == 0, err


class Reverse:
    """An app's own reranker (a plain object of this process): the pool, last first."""

    policy_id = "app.reverse"

    def __init__(self) -> None:
        self.pools: list[int] = []

    def rerank(self, query: str, candidates: Sequence[pcmem.MemoryHit], limit: int,
               progress: object = None) -> MemoryRerankDecision:
        self.pools.append(len(candidates))
        return MemoryRerankDecision(selected_ranks=tuple(range(len(candidates), len(candidates) - limit, -1)))


class SameText:
    """An app's decision model: "yes, already stated" when the texts are the same."""

    policy_id = "app.same-text"

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, request: DecisionRequest) -> DecisionResult:
        self.calls += 1
        same = request.subject.casefold() == request.evidence[0].casefold()
        return DecisionResult(outcome=DecisionOutcome.YES if same else DecisionOutcome.NO, policy_id=self.policy_id)


def test_an_apps_own_reranker_runs_in_the_client_on_the_owners_pool(owned):
    path, owner_pid = owned
    reverse = Reverse()
    config = pcmem.RuntimeConfig(memory_rerank_candidate_limit=2)
    with pcmem.open(path, reranker=reverse, config=config) as runtime:
        assert runtime.owner_pid == owner_pid
        scope = runtime.memory.for_scope("p")
        assert len(scope.search("release friday", reranker="none", limit=10).hits) > 2
        coarse = scope.search("release friday", reranker="none", limit=2)
        page = scope.search("release friday", limit=1)  # the runtime's reranker: no ConfigurationError
        assert reverse.pools == [2]  # the pool of the client's candidate limit, not the owner's 30
        assert page.rerank is not None and page.rerank.policy_id == "app.reverse"
        assert [h.citation for h in page.rerank.candidates] == [h.citation for h in coarse.hits]
        assert [h.citation for h in page.hits] == [coarse.hits[1].citation]
        several = runtime.memory.search("tea", scopes=["p"], limit=1)
        assert several.rerank is not None and several.rerank.policy_id == "app.reverse"
        # pcmem's embedding reranker reads the store's vectors: named, the owner runs it
        named = scope.search("release day", reranker=pcmem.build_reranker("embedding", pcmem.InferenceConfig()),
                             limit=2)
        assert named.rerank is not None and named.rerank.policy_id == "pcmem.memory.rerank.embedding.v1"


def test_an_apps_write_gate_runs_in_the_client(owned):
    path, _ = owned
    gate = SameText()
    with pcmem.open(path, write_gate=gate) as runtime:
        scope = runtime.memory.for_scope("p")
        result = scope.remember(NOTES[1])
        assert gate.calls > 0 and result.citations == () and len(result.duplicates) == 1
        assert result.duplicates[0].existing.entry_id == "n1"
        mixed = scope.remember(pcmem.RememberRequest(entries=(pcmem.NewEntry(text=NOTES[3]),
                                                             pcmem.NewEntry(text="A note nobody wrote yet."))))
        assert [d.index for d in mixed.duplicates] == [0] and len(mixed.citations) == 1
        written = scope.get(mixed.citations[0])
        assert written.entry.text == "A note nobody wrote yet."
        scope.forget(written.entry.entry_id)
        runtime.use_write_gate(None)
        assert scope.remember(NOTES[1], allow_duplicates=False).citations  # no gate any more: written again
        scope.forget(scope.list().entries[-1].entry.entry_id)


def test_an_apps_clock_stamps_its_writes(owned):
    path, _ = owned
    when = datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC)
    with pcmem.open(path, clock=lambda: when) as runtime:
        scope = runtime.memory.for_scope("clock")
        written = scope.remember("Stamped by the app's clock.", entry_id="stamped")
        assert scope.get(written.citations[0]).entry.created_at == when
        revised = scope.revise("stamped", text="Stamped again.", expected_version=1)
        assert scope.get(revised.citations[0]).entry.created_at == when
    with pcmem.open(path) as plain:  # the owner's own clock for a client without one
        now = plain.memory.for_scope("clock").remember("Now.")
        assert plain.memory.for_scope("clock").get(now.citations[0]).entry.created_at.year >= 2026


def test_a_clients_fusion_and_candidate_limit_are_its_own(owned, monkeypatch):
    path, _ = owned
    config = pcmem.RuntimeConfig(memory_search_fusion="convex")
    with pcmem.open(path, config=config) as runtime:
        page = runtime.memory.for_scope("p").search("release friday")
        assert (page.mode, page.fusion) == ("hybrid", "convex")
        assert runtime.memory.search_fusion().fusion == "convex"
    monkeypatch.setenv("PCMEM_SEARCH_FUSION", "weighted-rrf")
    with pcmem.open(path) as runtime:
        assert runtime.memory.for_scope("p").search("release friday").fusion == "weighted-rrf"
    done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "search", "-s", "p", "--json",
                           "release friday"], capture_output=True, text=True, timeout=120, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert pcmem.SearchPage.model_validate_json(done.stdout).fusion == "weighted-rrf"
    monkeypatch.delenv("PCMEM_SEARCH_FUSION")
    with pcmem.open(path) as runtime:  # and a client without one gets the store's default, as the owner does
        assert runtime.memory.for_scope("p").search("release friday").fusion == "rrf"


def test_a_full_text_only_client_stays_full_text_only(owned):
    """``embedder=None`` beside an owner with the store's model: searches are full text, and a write is refused as
    in one process (it would leave an entry without the store's vectors), instead of being embedded by the owner."""
    path, _ = owned
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("p")
        assert scope.search("release").mode == "fts"
        with pytest.raises(pcmem.CapabilityNotSupportedError):
            scope.search("release", mode="vector")
        with pytest.raises(pcmem.ConfigurationError, match="opened with no embedder"):
            scope.remember("Written without a vector.")
    with pcmem.open(path) as runtime:
        assert runtime.memory.for_scope("p").search("release").mode == "hybrid"


#: An app that owns a full-text-only store (no vectors, no model) and writes once more when told to.
FTS_OWNER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    scope = runtime.memory.for_scope("p")
    scope.remember("The owner writes full text only.")
    print("ready", flush=True)
    sys.stdin.readline()
    scope.remember("And still can after its clients came.")
    print("wrote", flush=True)
"""


def test_a_default_client_never_gives_a_full_text_store_a_vector_space(tmp_path):
    """A client opened plainly (``embedder="auto"``) beside an owner whose store has no vectors: its calls run full
    text, and nothing it does switches the store to a model, which would make the owner's next write fail."""
    path = tmp_path / "fts.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", FTS_OWNER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdin is not None and owner.stdout.readline() == "ready\n"
    with pcmem.open(path) as runtime:
        scope = runtime.memory.for_scope("p")
        assert scope.search("owner").mode == "fts"
        scope.remember("A client's note, full text too.")
        assert runtime.memory.for_scope("p").search("note").mode == "fts"
    owner.stdin.write("go\n")
    owner.stdin.flush()
    out, err = owner.communicate(timeout=60)
    assert owner.returncode == 0 and out.endswith("wrote\n"), err


def test_what_cannot_cross_is_refused_at_open_and_the_rest_is_accepted(owned):
    path, owner_pid = owned
    with pytest.raises(pcmem.ConfigurationError, match="embedder=HashEmbedder is an object of this process") as refused:
        pcmem.open(path, embedder=HashEmbedder())
    assert "\n" not in str(refused.value)
    with pytest.raises(pcmem.ConfigurationError, match="rerank_embedder=HashEmbedder"):
        pcmem.open(path, rerank_embedder=HashEmbedder())

    class OtherStoreReader:
        policy_id = "app.reads-vectors"

        def bind(self, default_embedder, vectors):  # noqa: ANN001, ANN202
            return self

        def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001, ANN202
            raise AssertionError("never runs")

    with pytest.raises(pcmem.ConfigurationError, match="reads the store's vectors"):
        pcmem.open(path, reranker=OtherStoreReader())  # type: ignore[arg-type]
    with pytest.raises(pcmem.InputError, match="unknown embedder"):  # as in one process, and at open
        pcmem.open(path, embedder="no-such-preset-or-folder")
    from pcmem.embedding import presets

    progress: list[tuple[int, int]] = []
    with pcmem.open(path, embedder=presets.shared(presets.DEFAULT_PRESET), model_progress=lambda d, t: progress.append(
            (d, t)), create=False) as runtime:  # a preset's object: named; the owner embeds with the same model
        assert runtime.owner_pid == owner_pid
        assert runtime.memory.for_scope("p").search("release friday").mode == "hybrid"


def test_both_retrievers_and_the_async_runtime_take_a_client(owned):
    path, owner_pid = owned
    from pcmem.integrations.langchain import PcmemRetriever

    with pcmem.open(path) as runtime:
        retriever = PcmemRetriever(memory=runtime.memory, scopes=["p"], limit=2)
        documents = retriever.invoke("when does the release go out")
        assert len(documents) == 2 and "citation" in documents[0].metadata
    llama = pytest.importorskip("pcmem.integrations.llama_index", exc_type=ImportError)
    with pcmem.open(path) as runtime:
        nodes = llama.PcmemLlamaRetriever(runtime.memory, ["p"], limit=2).retrieve("tea")
        assert len(nodes) == 2

    async def use_async() -> None:
        reverse = Reverse()
        async with pcmem.open_async(path, reranker=reverse) as runtime:
            assert runtime.owner_pid == owner_pid
            page = await runtime.memory.for_scope("p").search("release friday", limit=2)
            assert page.rerank is not None and page.rerank.policy_id == "app.reverse"
            documents = await PcmemRetriever(memory=runtime.memory, scopes=["p"], limit=1).ainvoke("tea")
            assert len(documents) == 1

    asyncio.run(use_async())
