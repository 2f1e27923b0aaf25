"""The in-process search views (postings, vectors) are shared by every thread of a process under one lock each: no
DuckDB statement may run while it is held, or every search of every scope waits for one thread's reads (issue #30).

A search reads its view's updates — a cold scope's postings, the entry events since the view's revision — and only
then takes the lock to change the view and score it. Checked without timing: a cursor that notes, at each statement,
whether the lock is held.
"""

from __future__ import annotations

import threading

import duckdb

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.store.duckdb.fts_cache import IndexStats, read_index_terms


class _Watching:
    """A cursor that records, for each statement, whether ``lock`` is held at that moment."""

    def __init__(self, inner: duckdb.DuckDBPyConnection, lock: threading.Lock, held: list[bool]) -> None:
        self._inner, self._lock, self._held = inner, lock, held

    def execute(self, statement, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self._held.append(self._lock.locked())
        return self._inner.execute(statement, *args, **kwargs)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._inner, name)


def test_a_fulltext_search_reads_the_store_without_holding_the_views_lock(db_path):
    with pcmem.open_sync(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=(NewEntry(text="kiwis and tea"), NewEntry(text="tea only"))))
        backend = runtime.backend
        cache, terms = backend._fts_cache, backend.analyzer.query_terms("tea")
        held: list[bool] = []

        def search() -> list[str]:
            head = memory.head()
            with backend._transaction() as cursor:
                totals, found_terms = read_index_terms(cursor, terms)  # the statistics the backend reads first
                stats = IndexStats.of(totals, found_terms.values())
                assert stats is not None
                found = cache.search(_Watching(cursor, cache._lock, held), head, stats, 10)
            return sorted(candidate.entry_version_id for candidate in found)

        cold = search()  # the whole scope's postings are read
        written = memory.remember("more tea, please")
        warm = search()  # the events since the view's revision are read
        assert len(cold) == 2 and warm == sorted([*cold, written.citations[0].entry_version_id])
    assert len(held) >= 4 and not any(held), held


def test_a_vector_search_reads_the_store_without_holding_the_views_lock(db_path):
    from pcmem.testing import HashEmbedder

    embedder = HashEmbedder(dimension=16)
    with pcmem.open_sync(db_path, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=(NewEntry(text="kiwis and tea"), NewEntry(text="tea only"))))
        backend = runtime.backend
        cache, query = backend._vector_cache, embedder.embed_query("tea")
        held: list[bool] = []

        def search() -> list[str]:
            head = memory.head()
            with backend._transaction() as cursor:
                found = cache.search(_Watching(cursor, cache._lock, held), head, embedder.profile, query, 10)
            return sorted(candidate.entry_version_id for candidate in found)

        cold = search()  # the whole scope's vectors are read
        written = memory.remember("more tea, please")
        warm = search()  # the events since the matrix's revision, and their vectors
        assert len(cold) == 2 and warm == sorted([*cold, written.citations[0].entry_version_id])
    assert len(held) >= 3 and not any(held), held
