"""A search made once (``searching_once``, a ``pcmem search`` call) is scored straight from the index tables in plain
Python: the same candidates, scores (to the bit), matched-term counts and order as the in-process view a repeated
search uses, on one store through revisions, retires, other scopes and ties at the cut — and it builds no view."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from oracles import reading, sql_bm25_search
from test_fts_cache import EXTRA, QUERIES

import pcmem
from pcmem import NewEntry, RememberRequest, RetireRequest, ReviseRequest, SearchMemoryRequest
from pcmem.store.port import is_searching_once, searching_once
from pcmem_bench.perf import sentences


def _both(runtime, scope: str, limit: int) -> int:
    """Every query searched once and through the view, compared exactly (and with the SQL oracle)."""
    backend = runtime.backend
    compared = 0
    for query in [*QUERIES, "same words", "tea release"]:
        terms = backend.analyzer.query_terms(query)
        with searching_once():
            once = backend.candidates(scope, fts_terms=terms, query_vector=None, limit=limit).fts
        viewed = backend.candidates(scope, fts_terms=terms, query_vector=None, limit=limit).fts
        assert once == viewed, query  # Candidate is a dataclass: ids, score (==, so bit-equal doubles), matched terms
        with reading(backend.path) as db:
            oracle = sql_bm25_search(db, backend.find_memory(scope).artifact_id, terms, limit)
        assert [(c.entry_version_id, c.score, c.matched_terms) for c in once] == \
               [(c.entry_version_id, c.score, c.matched_terms) for c in oracle], query
        compared += len(once)
    return compared


@pytest.mark.parametrize("limit", [1, 3, 50])
def test_a_search_made_once_ranks_exactly_as_the_view(db_path, limit):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        texts = sentences(400) + EXTRA
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=t)
                                                      for i, t in enumerate(texts))))
        # identical texts tie exactly: the ids decide, at the cut too
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"same-{n:02d}", text="same words here")
                                                      for n in reversed(range(6)))))
        runtime.memory.for_scope("other").remember(RememberRequest(entries=tuple(
            NewEntry(text=t) for t in sentences(200, seed=5))))  # other scopes move df and avgdl, not membership
        assert _both(runtime, "s", limit) >= 7 * min(limit, 3)
        head = memory.head().revision
        memory.revise(ReviseRequest(entry_id="e1", text="tea release tea", expected_revision=head))
        memory.retire(RetireRequest(entry_id="e2", expected_revision=head + 1))
        memory.retire(RetireRequest(entry_id="same-00", expected_revision=head + 2))
        _both(runtime, "s", limit)


def test_a_search_made_once_builds_no_view_and_the_flag_ends_with_the_block(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("The team deploys on Fridays.", entry_id="deploys")
        views = runtime.backend._fts_cache._scopes
        with searching_once():
            assert is_searching_once()
            hits = runtime.memory.for_scope("s").search("deploys").hits
        assert [hit.citation.entry_id for hit in hits] == ["deploys"]
        assert len(views) == 0 and not is_searching_once()
        runtime.memory.for_scope("s").search("deploys")  # a process that searches again keeps a view
        assert len(views) == 1


def test_the_cli_search_ranks_as_a_process_that_keeps_its_view(tmp_path):
    """End to end: ``pcmem search --json`` in its own process (scored once, from the tables) and the library's warm
    search (through its view) return the same hits, scores and channels, for one scope and for two."""
    path = tmp_path / "both.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember(RememberRequest(entries=tuple(
            NewEntry(entry_id=f"e{i}", text=t) for i, t in enumerate(sentences(150) + EXTRA))))
        runtime.memory.for_scope("t").remember(RememberRequest(entries=tuple(
            NewEntry(entry_id=f"t{i}", text=t) for i, t in enumerate(sentences(80, seed=3)))))
    searches = [(("s",), "release team notes"), (("s", "t"), "Priya moved the Windows installer on Monday")]
    cli = []
    for scopes, query in searches:
        done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "search", *[f"--scope={s}" for s in scopes],
                               "--mode", "fts", "--limit", "20", "--json", query],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        cli.append([(h["citation"]["entry_id"], h["score"], h["matched_by"]) for h in json.loads(done.stdout)["hits"]])
    with pcmem.open(path, embedder=None) as runtime:
        for (scopes, query), expected in zip(searches, cli, strict=True):
            request = SearchMemoryRequest(query=query, mode="fts", limit=20)
            for _ in range(2):  # the first search loads the view, the second reads it
                page = runtime.memory.search(request, scopes=scopes)
                assert [(h.citation.entry_id, h.score, list(h.matched_by)) for h in page.hits] == expected
            assert len(expected) >= 5
