"""The secondary embedding profile: a second embedder's vectors kept in the store for the embedding reranker.

Real DuckDB files; the tests' hash embedders stand in for the models (the mechanics are the point), one CLI test uses
the bundled MiniLM as the secondary embedder.
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner
from fakes import HashEmbedder

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.cli import main
from pcmem.errors import CapabilityNotSupportedError, EmbeddingError, StoreError
from pcmem.rerank.embedding import EmbeddingReranker
from pcmem.types.memory import ReactivateRequest, RetireRequest, ReviseRequest
from pcmem.types.search import SearchMemoryRequest

TEXTS = [
    "release notes for the desktop app",
    "the desktop app ships on thursday",
    "lunch is at noon on thursday",
    "unrelated gardening tip about tomatoes",
]


class FailingEmbedder(HashEmbedder):
    def embed_documents(self, texts, progress=None):
        raise EmbeddingError("the model crashed")


def _remember(runtime, texts=TEXTS, scope="project"):
    result = runtime.memory.for_scope(scope).remember(
        RememberRequest(entries=[NewEntry(kind="fact", text=t) for t in texts]))
    return [c.entry_version_id for c in result.citations]


def _secondary_rows(path) -> int:
    with duckdb.connect(str(path), read_only=True) as db:
        return db.execute("SELECT count(*) FROM embeddings_secondary").fetchone()[0]


@pytest.fixture
def primary():
    return HashEmbedder()


@pytest.fixture
def second():
    return HashEmbedder("test/second", 32)


def test_writes_store_the_secondary_vectors_in_their_transaction(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary, rerank_embedder=second) as runtime:
        report = runtime.reindex_secondary(embedder=second)
        assert report is not None and report.embedded == 0 and report.profile == second.profile
        ids = _remember(runtime)
        stored = runtime.backend.stored_vectors(second.profile, ids)
        assert set(stored) == set(ids)
        assert np.allclose(np.stack([stored[i] for i in ids]), second.embed_documents(TEXTS), atol=1e-6)
        assert runtime.backend.count_missing_vectors(second.profile) == 0
        memory = runtime.memory.for_scope("project")
        entry = memory.list().entries[0].entry
        revised = memory.revise(ReviseRequest(entry_id=entry.entry_id, text="the desktop app ships on friday now",
                                              expected_version=entry.version))
        assert revised.citations[0].entry_version_id in runtime.backend.stored_vectors(
            second.profile, [revised.citations[0].entry_version_id])
    with pcmem.open(db_path, embedder=primary) as reopened:  # survives reopening; the profile is recorded
        assert reopened.backend.secondary_embedding_profile() == second.profile
        assert reopened.backend.embedding_profile() == primary.profile
        assert reopened.backend.count_missing_vectors(second.profile) == 0


def test_reindex_fills_what_other_runtimes_wrote_and_resumes(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary, rerank_embedder="none") as runtime:
        ids = _remember(runtime)
        assert runtime.backend.secondary_embedding_profile() is None
        calls = []
        report = runtime.reindex_secondary(lambda done, total: calls.append((done, total)), embedder=second)
        assert report is not None and report.embedded == len(TEXTS) and calls[-1] == (len(TEXTS), len(TEXTS))
        assert set(runtime.backend.stored_vectors(second.profile, ids)) == set(ids)
        assert runtime.reindex_secondary(embedder=second).embedded == 0  # nothing left: a rerun embeds nothing
        # the active profile is untouched: searches still use it
        assert runtime.backend.embedding_profile() == primary.profile
    with pcmem.open(db_path, embedder=primary, rerank_embedder="none") as other:  # writes without it
        late = _remember(other, ["a late note about tomatoes"])
        assert other.backend.count_missing_vectors(second.profile) == 1
        notes = " ".join(other.backend.check().notes)
        assert "secondary embeddings" in notes and "1 active entries without one" in notes
        assert other.reindex_secondary(embedder=second).embedded == 1
        assert set(other.backend.stored_vectors(second.profile, late)) == set(late)
        assert "complete" in " ".join(other.backend.check().notes)


def test_switching_the_secondary_profile_replaces_it_and_none_drops_it(db_path, primary, second):
    third = HashEmbedder("test/third", 24)
    with pcmem.open(db_path, embedder=primary) as runtime:
        ids = _remember(runtime)
        runtime.reindex_secondary(embedder=second)
        report = runtime.reindex_secondary(embedder=third)
        assert report is not None and report.previous_profile == second.profile and report.embedded == len(TEXTS)
        assert runtime.backend.secondary_embedding_profile() == third.profile
        assert runtime.backend.stored_vectors(second.profile, ids) == {}  # the old model's vectors are gone
        assert runtime.reindex_secondary(embedder="none") is None
        assert runtime.backend.secondary_embedding_profile() is None
        assert runtime.backend.stored_vectors(third.profile, ids) == {}
        with pytest.raises(StoreError, match="active profile"):
            runtime.reindex_secondary(embedder=primary)


def test_reranker_reads_stored_vectors_and_names_the_embedder(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary, rerank_embedder=second) as runtime:
        runtime.reindex_secondary(embedder=second)
        _remember(runtime)
        second.calls = 0
        request = SearchMemoryRequest(query="desktop app thursday", limit=2, mode="hybrid")
        page = runtime.memory.for_scope("project").search(request, reranker=EmbeddingReranker())
        assert page.rerank is not None and page.rerank.embedder == second.profile.describe()
        assert second.calls == 0  # every candidate's vector came from the store: only the query was embedded
        # the order is the cosine order under the second embedder
        q = second.embed_query(request.query)
        pool = page.rerank.candidates
        cosines = [float(second.embed_documents([h.text])[0] @ q) for h in pool]
        assert page.rerank.selected_ranks == tuple(
            i + 1 for i in sorted(range(len(pool)), key=lambda i: (-cosines[i], i))[:2])


def test_reranker_embeds_only_the_missing_ones_and_never_writes(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary, rerank_embedder="none") as writer:
        writer.reindex_secondary(embedder=second)  # empty store: profile set, nothing to embed
    with pcmem.open(db_path, embedder=primary, rerank_embedder="none") as writer:
        _remember(writer, TEXTS[:2])  # this runtime has no rerank embedder: no secondary vectors
    with pcmem.open(db_path, embedder=primary, rerank_embedder=second) as runtime:
        _remember(runtime, TEXTS[2:])
        second.calls = 0
        page = runtime.memory.for_scope("project").search(
            SearchMemoryRequest(query="thursday desktop lunch tomatoes", limit=4, mode="hybrid"),
            reranker=EmbeddingReranker())
        missing = {h.citation.entry_version_id for h in page.rerank.candidates} & {
            v for v, _ in runtime.backend.versions_missing_vectors(second.profile, 100)}
        assert missing and second.calls == len(missing)  # only the candidates without a stored vector
        assert runtime.backend.count_missing_vectors(second.profile) == 2  # a search stores nothing


def test_retire_and_reactivate_keep_the_secondary_vector(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary, rerank_embedder="none") as runtime:
        _remember(runtime, TEXTS[:1])
        runtime.reindex_secondary(embedder=second)
        runtime.backend.set_secondary_embedding_profile(None)
        runtime.backend.set_secondary_embedding_profile(second.profile)  # re-set: every vector is missing again
    with pcmem.open(db_path, embedder=primary, rerank_embedder=second) as runtime:
        memory = runtime.memory.for_scope("project")
        entry = memory.list().entries[0].entry
        memory.retire(RetireRequest(entry_id=entry.entry_id, expected_version=entry.version))
        assert runtime.backend.count_missing_vectors(second.profile) == 0  # retired entries need none
        memory.reactivate(ReactivateRequest(entry_id=entry.entry_id, expected_version=entry.version))
        assert runtime.backend.count_missing_vectors(second.profile) == 0  # the reactivation embedded it


def test_a_failing_secondary_embedder_fails_the_write(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary) as runtime:
        runtime.reindex_secondary(embedder=second)
    failing = FailingEmbedder("test/second", 32)  # same profile as the store's secondary one
    with pcmem.open(db_path, embedder=primary, rerank_embedder=failing) as runtime:
        with pytest.raises(EmbeddingError, match="crashed"):
            _remember(runtime)
        assert runtime.memory.for_scope("project").head() is None  # nothing acknowledged, nothing written


def test_erasure_deletes_the_secondary_vectors(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary, rerank_embedder=second) as runtime:
        runtime.reindex_secondary(embedder=second)
        ids = _remember(runtime)
        _remember(runtime, ["a note in another scope"], scope="other")
        memory = runtime.memory.for_scope("project")
        first = memory.list().entries[0].entry
        memory.forget(first.entry_id)
        assert first.entry_version_id not in runtime.backend.stored_vectors(second.profile, ids)
        assert len(runtime.backend.stored_vectors(second.profile, ids)) == len(TEXTS) - 1
        memory.forget_scope()
        assert runtime.backend.stored_vectors(second.profile, ids) == {}
        assert not runtime.backend.check().problems
    assert _secondary_rows(db_path) == 1  # only the other scope's vector is left in the file


def test_an_older_pcmem_cannot_open_a_store_with_a_secondary_profile(db_path, primary):
    pcmem.open(db_path, embedder=primary).close()
    with duckdb.connect(str(db_path), read_only=True) as db:
        names = [n for (n,) in db.execute("SELECT name FROM pcmem_migrations ORDER BY seq").fetchall()]
    # the migration is what makes an older pcmem (which would not erase secondary vectors) refuse the file
    assert "0006_secondary_embeddings" in names


def test_seekdb_refuses_a_secondary_profile_with_a_typed_error(seekdb_url, primary, second):
    with pcmem.open(seekdb_url, embedder=primary) as runtime:
        assert runtime.backend.secondary_embedding_profile() is None
        with pytest.raises(CapabilityNotSupportedError, match="seekdb"):
            runtime.reindex_secondary(embedder=second)


def test_cli_reindex_rerank_embedder_with_minilm(tmp_path):
    store = tmp_path / "cli.duckdb"
    with pcmem.open(store, embedder=HashEmbedder()) as runtime:  # a store whose own model is not MiniLM
        _remember(runtime)
    runner = CliRunner()
    result = runner.invoke(main, ["--db", str(store), "reindex", "--rerank-embedder", "minilm-l6-int8", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert "MiniLM" in report["secondary_profile"] and report["embedded"] == len(TEXTS)
    # a later CLI write fills it too: the runtime picks the rerank embedder from the store's secondary profile
    result = runner.invoke(main, ["--db", str(store), "search", "--scope", "project", "--rerank", "embedding",
                                  "--mode", "fts", "--limit", "2", "--json", "desktop app thursday"])
    assert result.exit_code == 0, result.output
    page = json.loads(result.output)
    assert "MiniLM" in page["rerank"]["embedder"] and len(page["hits"]) == 2
    result = runner.invoke(main, ["--db", str(store), "check"])
    assert "secondary embeddings" in result.output and "complete" in result.output, result.output


def test_the_rerank_embedder_comes_from_the_environment_or_the_store(db_path, primary, monkeypatch):
    from pcmem.embedding.presets import EMBEDDER_PRESETS

    minilm = EMBEDDER_PRESETS["minilm-l6-int8"].profile
    with pcmem.open(db_path, embedder=primary) as runtime:
        assert runtime.rerank_embedder is None  # no secondary profile, nothing configured
        runtime.backend.set_secondary_embedding_profile(minilm)
    with pcmem.open(db_path, embedder=primary) as runtime:
        assert runtime.rerank_embedder is None  # nothing is read at open: found on first need
        ids = _remember(runtime, TEXTS[:1])
        assert runtime.rerank_embedder is not None and runtime.rerank_embedder.profile == minilm  # from the store
        assert set(runtime.backend.stored_vectors(minilm, ids)) == set(ids)  # and the write stored its vector
    monkeypatch.setenv("PCMEM_RERANK_EMBEDDER", "none")
    with pcmem.open(db_path, embedder=primary) as runtime:
        _remember(runtime, TEXTS[1:2])
        assert runtime.rerank_embedder is None and runtime.backend.count_missing_vectors(minilm) == 1
    monkeypatch.setenv("PCMEM_RERANK_EMBEDDER", "no-such-preset")
    with pytest.raises(pcmem.PcmemError):
        pcmem.open(db_path, embedder=primary)


def test_the_server_reranks_by_embedding_with_the_secondary_vectors(tmp_path, primary):
    from pcmem.serve import open_for_serving

    store = tmp_path / "served.duckdb"
    with pcmem.open(store, embedder=primary) as runtime:
        _remember(runtime)
        runtime.reindex_secondary(embedder="minilm-l6-int8")
    runtime = open_for_serving(store, embedder="auto", rerank="embedding")
    try:
        assert isinstance(runtime.reranker, EmbeddingReranker)
        page = runtime.memory.for_scope("project").search(SearchMemoryRequest(query="desktop app", limit=2,
                                                                               mode="fts"))
        assert page.rerank is not None and "MiniLM" in (page.rerank.embedder or "")
    finally:
        runtime.close()


def test_check_reports_orphan_secondary_vectors_and_repair_removes_them(db_path, primary, second):
    with pcmem.open(db_path, embedder=primary) as runtime:
        _remember(runtime)
        runtime.reindex_secondary(embedder=second)
    with duckdb.connect(str(db_path)) as db:
        db.execute("INSERT INTO embeddings_secondary SELECT 'ver_gone', vec FROM embeddings_secondary LIMIT 1")
    with pcmem.open(db_path, embedder=primary) as runtime:
        assert any("embeddings_secondary belong to no entry version" in p for p in runtime.backend.check().problems)
        assert not runtime.backend.repair().problems
        assert runtime.backend.count_missing_vectors(second.profile) == 0  # repair keeps the live ones
