"""The incrementally maintained FTS index scores exactly like DuckDB's own match_bm25 over the same tables."""

from __future__ import annotations

import pytest
from oracles import extension_scores, reading

import pcmem
from pcmem import NewEntry, RememberRequest, RetireRequest, ReviseRequest
from pcmem.store.duckdb import fts_index

TEXTS = [
    "The team deploys the desktop app every Thursday afternoon.",
    "Marco drinks oolong tea and never coffee; tea tea tea.",
    "Priya adopted a beagle puppy named Biscuit in March.",
    "Deploys are frozen during the March offsite.",
    "与上海合作伙伴的周会改到每周二上午十点。",
]


@pytest.fixture
def store(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=t) for i, t in enumerate(TEXTS))))
        runtime.memory.for_scope("other").remember("tea in another scope must not change this scope's ranking")
        yield runtime, memory


def _compare(runtime, memory, query):
    terms = runtime.backend.analyzer.query_terms(query)
    artifact = memory.head().artifact_id
    found = runtime.backend.candidates("s", fts_terms=terms, query_vector=None, limit=100)
    ours = {c.entry_version_id: c.score for c in found.fts}
    with reading(runtime.backend.path) as db:
        theirs = extension_scores(db, artifact, terms)
    assert ours.keys() == theirs.keys()
    for version_id, score in theirs.items():
        assert ours[version_id] == pytest.approx(score, rel=1e-12)
    return ours


@pytest.mark.parametrize("query", ["tea", "deploys March", "beagle puppy Biscuit", "周会", "nothing-matches-this"])
def test_scores_equal_the_extension_macro(store, query):
    runtime, memory = store
    _compare(runtime, memory, query)


def test_scores_stay_equal_after_revise_and_retire(store):
    runtime, memory = store
    memory.revise(ReviseRequest(entry_id="e1", text="Marco switched to espresso.", expected_revision=1))
    memory.retire(RetireRequest(entry_id="e3", expected_revision=2))
    assert _compare(runtime, memory, "tea") == {}
    assert len(_compare(runtime, memory, "deploys espresso march")) == 3  # e0, e1 (revised), e2; e3 retired


def test_index_statistics_match_a_full_rebuild(store):
    runtime, memory = store
    memory.revise(ReviseRequest(entry_id="e0", text="Deploys moved to Tuesday.", expected_revision=1))
    with reading(runtime.backend.path) as cursor:
        stats = cursor.execute(f"SELECT num_docs, avgdl FROM {fts_index.SCHEMA}.stats").fetchone()
        docs = cursor.execute(f"SELECT count(*), avg(len) FROM {fts_index.SCHEMA}.docs").fetchone()
        bad_df = cursor.execute(
            f"""SELECT count(*) FROM {fts_index.SCHEMA}.dict d
                LEFT JOIN (SELECT termid, count(DISTINCT docid) n FROM {fts_index.SCHEMA}.terms GROUP BY termid) t
                USING (termid) WHERE d.df != coalesce(t.n, 0)"""
        ).fetchone()
    assert stats == docs == (6, pytest.approx(docs[1]))
    assert bad_df == (0,)
