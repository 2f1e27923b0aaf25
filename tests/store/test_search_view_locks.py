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
    with pcmem.open(db_path, embedder=None) as runtime:
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
    with pcmem.open(db_path, embedder=embedder) as runtime:
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


def test_threads_behind_one_write_bring_a_scope_view_up_once(db_path, monkeypatch):
    # After a write, every searching thread finds the scope's views behind the new head. One of them reads the events
    # since (and the new documents' postings, the new vectors); the others wait for it and use the view it brought up,
    # instead of each reading the same rows again (issue #30: with 4 threads a write's catch-up was paid 4 times).
    # Deterministic: the first reader holds on until a second thread reads too, or 1 s passed.
    from fakes import TextHashEmbedder
    from thread_probes import count_reads_held_open

    from pcmem import SearchMemoryRequest
    from pcmem.store.duckdb import fts_cache, vector_cache

    with pcmem.open(db_path, embedder=TextHashEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=f"kiwi note {i}") for i in range(30))))
        memory.search(SearchMemoryRequest(query="kiwi note", mode="hybrid"))  # both views loaded
        written = memory.remember("a kiwi note written last").citations[0].entry_version_id
        calls = count_reads_held_open(monkeypatch, ((fts_cache, "_read_moves"), (vector_cache, "head_moves")))
        pages: list[list[str]] = []

        def search() -> None:
            page = memory.search(SearchMemoryRequest(query="kiwi note written last", mode="hybrid", limit=50))
            pages.append([hit.citation.entry_version_id for hit in page.hits])

        threads = [threading.Thread(target=search) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(pages) == 2 and pages[0] == pages[1] and written in pages[0]
        assert calls == {"_read_moves": [1], "head_moves": [1]}  # each view's events read once, by one thread
