"""The in-process postings view gives bit-identical BM25 scores and order to the SQL over the index tables, stays
current through writes of this and other processes, follows an index rebuild, and is bounded by an LRU."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from oracles import reading, sql_bm25_search

import pcmem
from pcmem import NewEntry, RememberRequest, RetireRequest, ReviseRequest
from pcmem.store.duckdb.scope_views import ScopeLRU
from pcmem_bench.perf import sentences

EXTRA = [
    "Marco drinks oolong tea and never coffee; tea tea tea.",
    "与上海合作伙伴的周会改到每周二上午十点。",
    "Release 2.4 release notes: release on Thursday, release again Friday.",
    "the the the",  # only stopwords: a document without terms
]
QUERIES = ["release team", "tea coffee", "Priya moved the Windows installer on Monday", "周会",
           "LUM-4242 ticket note", "shipped translated measured documented", "nothing-matches-this", "release"]


def _same_as_sql(runtime, scope: str, limit: int = 500) -> int:
    backend = runtime.backend
    memory = backend.find_memory(scope)
    compared = 0
    for query in QUERIES:
        terms = backend.analyzer.query_terms(query)
        ours = backend.candidates(scope, fts_terms=terms, query_vector=None, limit=limit).fts
        with reading(backend.path) as db:
            theirs = sql_bm25_search(db, memory.artifact_id, terms, limit)
        # exact: same versions, same order, same doubles, same matched-term counts
        assert [(c.entry_version_id, c.score, c.matched_terms) for c in ours] == \
               [(c.entry_version_id, c.score, c.matched_terms) for c in theirs], query
        compared += len(ours)
    return compared


def test_scores_and_order_are_bit_identical_through_writes(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        texts = sentences(600) + EXTRA
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=t)
                                                      for i, t in enumerate(texts))))
        runtime.memory.for_scope("other").remember(RememberRequest(entries=tuple(
            NewEntry(text=t) for t in sentences(300, seed=5))))  # other scopes move df and avgdl, not membership
        assert _same_as_sql(runtime, "s") > 100
        head = memory.head().revision
        # revisions, retires and enough new documents to force a compaction of the view (delta > 256 postings)
        for step in range(3):
            memory.revise(ReviseRequest(entry_id=f"e{step}", text=f"tea release {step} tea", expected_revision=head))
            memory.retire(RetireRequest(entry_id=f"e{100 + step}", expected_revision=head + 1))
            memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(80, seed=step))))
            head += 3
            _same_as_sql(runtime, "s")
        runtime.memory.for_scope("other").remember("release release release tea")  # store-wide stats move
        _same_as_sql(runtime, "s")


def _in_other_process(path, code: str) -> None:
    script = textwrap.dedent(f"""
        import pcmem
        from pcmem import NewEntry, RememberRequest
        with pcmem.open({str(path)!r}, embedder=None) as runtime:
    """) + textwrap.indent(textwrap.dedent(code), "    ")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_writes_of_another_process_and_a_rebuild_are_seen(db_path):
    """Another process writes through this one (its owner); a rebuild renumbers documents and terms: the loaded view
    follows both."""
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(200) + EXTRA)))
        _same_as_sql(runtime, "s")  # the view is loaded now
        _in_other_process(db_path, """
            assert runtime.owner_pid is not None  # a client: the write runs in the owner
            runtime.memory.for_scope("s").remember("a zanzibar quokka joined the release team")
        """)
        hits = runtime.backend.candidates("s", fts_terms=["zanzibar"], query_vector=None, limit=5).fts
        assert len(hits) == 1
        _same_as_sql(runtime, "s")
        runtime.backend.repair(analyzer="v1")  # the view must be read again
        _same_as_sql(runtime, "s")


def test_many_scopes_stay_within_the_budget(db_path, monkeypatch):
    monkeypatch.setattr("pcmem.store.duckdb.scope_views.DEFAULT_BUDGET", 250)
    with pcmem.open(db_path, embedder=None) as runtime:
        for n in range(6):
            runtime.memory.for_scope(f"s{n}").remember(RememberRequest(entries=tuple(
                NewEntry(text=t) for t in sentences(100, seed=n))))
        for _ in range(2):
            for n in range(6):
                _same_as_sql(runtime, f"s{n}")
        cache = runtime.backend._fts_cache._scopes
        assert cache.total <= 250 and len(cache) <= 2


def test_the_lru_evicts_least_recently_used_first():
    lru: ScopeLRU[str] = ScopeLRU(budget=10)
    lru.put("a", "A", 4)
    lru.put("b", "B", 4)
    assert lru.get("a") == "A"  # a is now the most recent
    lru.put("c", "C", 4)  # over budget: b goes, not a
    assert lru.get("b") is None and lru.get("a") == "A" and lru.get("c") == "C"
    lru.put("huge", "H", 50)  # alone over budget: kept while in use, everything else goes
    assert len(lru) == 1 and lru.get("huge") == "H"


@pytest.mark.parametrize("limit", [1, 3, 10])
def test_ties_at_the_cut_break_on_identity(db_path, limit):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        # identical texts: identical scores; the ids decide, bytewise
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"id-{n:02d}", text="same words here")
                                                      for n in reversed(range(12)))))
        found = runtime.backend.candidates("s", fts_terms=["word"], query_vector=None, limit=limit).fts
        assert [c.entry_id for c in found] == [f"id-{n:02d}" for n in range(limit)]
        assert len({c.score for c in found}) == 1
