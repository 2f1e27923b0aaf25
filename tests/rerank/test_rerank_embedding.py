"""The embedding rerank policy (pcmem.memory.rerank.embedding.v1): cosine order of the coarse pool, inside the seam.

Runs on real DuckDB stores with the tests' hash embedder (bag of words: texts sharing words are close), so the
expected order is known; one test uses the bundled MiniLM through the CLI.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from fakes import HashEmbedder

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.cli import main
from pcmem.compose.rerankers import build_reranker
from pcmem.config import InferenceConfig
from pcmem.errors import RerankError
from pcmem.rerank.embedding import POLICY_ID, EmbeddingReranker
from pcmem.types.memory import Citation
from pcmem.types.rerank import MODEL_RERANK_POLICIES, RERANK_POLICIES
from pcmem.types.search import MemoryHit, SearchMemoryRequest

TEXTS = [
    "release notes for the desktop app",
    "the desktop app ships on thursday",
    "lunch is at noon on thursday",
    "the release train leaves every thursday for the desktop app",
    "unrelated gardening tip about tomatoes",
]


def _seed(path, embedder):
    runtime = pcmem.open(path, embedder=embedder)
    memory = runtime.memory.for_scope("project")
    memory.remember(RememberRequest(entries=[NewEntry(kind="fact", text=t) for t in TEXTS]))
    return runtime, memory


def test_policy_is_listed_once_and_needs_no_model():
    assert "embedding" in RERANK_POLICIES and "embedding" not in MODEL_RERANK_POLICIES
    reranker = build_reranker("embedding", InferenceConfig())  # no generation model configured: still builds
    assert isinstance(reranker, EmbeddingReranker) and reranker.policy_id == POLICY_ID == \
        "pcmem.memory.rerank.embedding.v1"


def test_orders_the_pool_by_cosine_with_stored_vectors(tmp_path):
    embedder = HashEmbedder()
    runtime, memory = _seed(tmp_path / "s.duckdb", embedder)
    with runtime:
        query = "desktop app release thursday"
        coarse = memory.search(SearchMemoryRequest(query=query, limit=5, mode="hybrid"))
        embedder.calls = 0
        page = memory.search(SearchMemoryRequest(query=query, limit=3, mode="hybrid"),
                             reranker=EmbeddingReranker())
        assert embedder.calls == 0  # candidates' vectors came from the store: only the query was embedded
        trace = page.rerank
        assert trace is not None and trace.policy_id == POLICY_ID
        assert trace.embedder == embedder.profile.describe()
        assert trace.usage.requests == 0 and trace.decision_calls is None and trace.latency_ms >= 0
        assert len(page.hits) == len(trace.selected_ranks) == 3
        # the expected order: cosine under the same embedder, ties in coarse order
        pool = trace.candidates
        assert [h.citation for h in pool] == [h.citation for h in coarse.hits][: len(pool)]
        q = embedder.embed_query(query)
        cosines = [float(embedder.embed_documents([h.text])[0] @ q) for h in pool]
        expected = sorted(range(len(pool)), key=lambda i: (-cosines[i], i))[:3]
        assert trace.selected_ranks == tuple(i + 1 for i in expected)
        assert [h.citation for h in page.hits] == [pool[i].citation for i in expected]  # the pool's own hits



def test_the_trace_records_each_candidates_cosine_in_coarse_order(tmp_path):
    """#32: the trace shows what the pool was sorted by; the selection is still only positions (the seam)."""
    embedder = HashEmbedder()
    runtime, memory = _seed(tmp_path / "s.duckdb", embedder)
    with runtime:
        query = "desktop app release thursday"
        trace = memory.search(SearchMemoryRequest(query=query, limit=2, mode="hybrid"),
                              reranker=EmbeddingReranker()).rerank
        assert trace is not None and len(trace.cosines) == len(trace.candidates) > 2
        q = embedder.embed_query(query)
        expected = [float(embedder.embed_documents([hit.text])[0] @ q) for hit in trace.candidates]
        assert trace.cosines == pytest.approx(expected, abs=1e-6)
        assert trace.selected_ranks == tuple(sorted(range(1, len(expected) + 1),
                                                    key=lambda rank: (-expected[rank - 1], rank))[:2])
        assert all(-1.0 <= cosine <= 1.0 for cosine in trace.cosines)


def test_never_pads_and_keeps_identity(tmp_path):
    runtime, memory = _seed(tmp_path / "s.duckdb", HashEmbedder())
    with runtime:
        page = memory.search(SearchMemoryRequest(query="tomatoes", limit=10, mode="hybrid"),
                             reranker=EmbeddingReranker())
        assert page.rerank is not None
        assert len(page.hits) == len(page.rerank.candidates) <= len(TEXTS)  # limit > pool: the pool, no padding
        assert sorted(page.rerank.selected_ranks) == list(range(1, len(page.rerank.candidates) + 1))


def test_second_embedder_embeds_candidates_once_and_caches(tmp_path):
    store_embedder, second = HashEmbedder(), HashEmbedder("test/second", 32)
    runtime, memory = _seed(tmp_path / "s.duckdb", store_embedder)
    with runtime:
        reranker = EmbeddingReranker(second)
        request = SearchMemoryRequest(query="desktop app thursday", limit=2, mode="hybrid")
        first = memory.search(request, reranker=reranker)
        assert first.rerank is not None and first.rerank.embedder == second.profile.describe()
        embedded = second.calls
        assert embedded == len(first.rerank.candidates)  # not in the store: embedded on first sight
        memory.search(request, reranker=reranker)
        assert second.calls == embedded  # the second search reuses the cached vectors



def test_second_embedder_embeds_each_text_once_across_stores(tmp_path):
    """The cache is keyed by the text: the same texts in another store (other entry version ids) are not embedded
    again, and two candidates with one text cost one embedding."""
    second = HashEmbedder("test/second", 32)
    reranker = EmbeddingReranker(second)
    request = SearchMemoryRequest(query="desktop app thursday", limit=2, mode="hybrid")
    runtime, memory = _seed(tmp_path / "a.duckdb", HashEmbedder())
    with runtime:
        first = memory.search(request, reranker=reranker)
    embedded = second.calls
    assert first.rerank is not None and embedded == len(first.rerank.candidates)
    runtime, memory = _seed(tmp_path / "b.duckdb", HashEmbedder())
    with runtime:
        again = memory.search(request, reranker=reranker)
        assert again.rerank is not None and again.rerank.selected_ranks == first.rerank.selected_ranks
        assert {h.citation.entry_version_id for h in again.hits}.isdisjoint(
            {h.citation.entry_version_id for h in first.hits})
        assert second.calls == embedded  # other versions, same texts: nothing embedded
        memory.remember(RememberRequest(entries=[NewEntry(kind="fact", text="the desktop app ships friday")] * 2))
        before = second.calls
        page = memory.search(SearchMemoryRequest(query="desktop app ships friday", limit=3, mode="hybrid"),
                             reranker=reranker)
        assert page.rerank is not None
        assert second.calls == before + 1  # two new entries, one new text: one embedding

def test_no_embedder_fails_closed(tmp_path):
    with pcmem.open(tmp_path / "s.duckdb", embedder=None) as runtime:
        memory = runtime.memory.for_scope("project")
        memory.remember(RememberRequest(entries=[NewEntry(kind="fact", text=t) for t in TEXTS]))
        with pytest.raises(RerankError, match="no embedder"):
            memory.search(SearchMemoryRequest(query="desktop", limit=2), reranker=EmbeddingReranker())


def test_unbound_reranker_uses_only_what_it_is_given():
    embedder = HashEmbedder()
    hits = [MemoryHit(citation=Citation(artifact_id="a", revision=1, entry_id=f"e{i}", entry_version_id=f"v{i}"),
                      text=t, kind="fact", score=0.0, matched_by=("fts",)) for i, t in enumerate(TEXTS)]
    decision = EmbeddingReranker(embedder).rerank("gardening tomatoes", hits, 2)
    assert decision.selected_ranks[0] == 5 and len(decision.selected_ranks) == 2
    vectors = {"v0": np.asarray(embedder.embed_query("gardening tomatoes"))}
    bound = EmbeddingReranker().bind(embedder, lambda profile, ids: {i: vectors[i] for i in ids if i in vectors})
    assert bound.rerank("gardening tomatoes", hits, 1).selected_ranks == (1,)  # the stored vector wins


def test_cli_search_rerank_embedding_with_minilm(tmp_path):
    store = str(tmp_path / "cli.duckdb")
    runner = CliRunner()
    for text in TEXTS:
        result = runner.invoke(main, ["--db", store, "remember", "--scope", "project", "--kind", "fact", text])
        assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["--db", store, "search", "--scope", "project", "--rerank", "embedding",
                                  "--limit", "2", "--json", "when does the desktop app ship?"])
    assert result.exit_code == 0, result.output
    page = json.loads(result.output)
    assert page["rerank"]["policy_id"] == POLICY_ID and "MiniLM" in page["rerank"]["embedder"]
    assert len(page["hits"]) == 2
