"""A warm search of a store this process holds runs no DuckDB statement (issue #30): heads, profile and index
statistics come from the memo of the last write generation. The memo never outlives a write: a write through this
runtime, another runtime or another backend of the same file is seen by the next search, and a write that begins
while a search runs makes that search read again in a plain snapshot, never a mix of both states."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from fakes import TextHashEmbedder

import pcmem
from pcmem import NewEntry, RememberRequest, SearchMemoryRequest
from pcmem.errors import SnapshotMoved
from pcmem.store.duckdb import DuckDBBackend
from pcmem_bench.perf import sentences


class _CountingCursor:
    """A real DuckDB cursor that notes the first word of every statement it runs."""

    def __init__(self, cursor, statements: list[str]) -> None:
        self._cursor, self._statements = cursor, statements

    def execute(self, sql, *args, **kwargs):
        self._statements.append(sql.split()[0].upper())
        self._cursor.execute(sql, *args, **kwargs)
        return self

    def __getattr__(self, name):
        return getattr(self._cursor, name)


def _count_statements(backend, monkeypatch) -> list[str]:
    statements: list[str] = []
    pool = backend._connections
    lend = pool.cursor

    @contextmanager
    def counting():
        with lend() as cursor:
            yield _CountingCursor(cursor, statements)

    monkeypatch.setattr(pool, "cursor", counting)
    return statements


def _search(memory, query: str, mode: str = "hybrid"):
    return memory.search(SearchMemoryRequest(query=query, mode=mode))


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_a_warm_search_runs_no_statement(db_path, monkeypatch, mode):
    with pcmem.open(db_path, embedder=TextHashEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(200))))
        first = _search(memory, "Priya moved the Windows installer", mode)
        statements = _count_statements(runtime.backend, monkeypatch)
        again = _search(memory, "Priya moved the Windows installer", mode)
        assert statements == []
        assert again == first  # the same page: hits, scores, citations
        _search(memory, "the quarterly roadmap was measured", mode)  # new terms: one snapshot reads them
        assert statements.count("BEGIN") <= 1


def test_a_write_moves_the_memo_for_every_backend_of_the_file(db_path):
    # Two backends of one file in one process share DuckDB's instance: a write through either is seen by both.
    with pcmem.SyncRuntime(DuckDBBackend(db_path)) as reader, pcmem.SyncRuntime(DuckDBBackend(db_path)) as writer:
        memory = reader.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(50))))
        assert _search(memory, "zanzibar quokka", "fts").hits == ()
        head = writer.memory.for_scope("s").remember("a zanzibar quokka joined the release team").memory
        hits = _search(memory, "zanzibar quokka", "fts").hits
        assert [h.text for h in hits] == ["a zanzibar quokka joined the release team"]
        assert hits[0].citation.revision == head.revision


class _WritesWhileEmbedding:
    """An embedder that, once, lets a write land between the search's mode check and its candidates."""

    def __init__(self, write) -> None:
        self._inner = TextHashEmbedder()
        self.profile = self._inner.profile
        self._write = write
        self.queries = 0

    def embed_documents(self, texts, progress=None):
        return self._inner.embed_documents(texts, progress)

    def embed_query(self, text):
        self.queries += 1
        if self._write is not None:
            write, self._write = self._write, None
            write()
        return self._inner.embed_query(text)


def test_a_write_under_a_search_makes_it_read_one_newer_snapshot(db_path):
    embedder = _WritesWhileEmbedding(None)
    with pcmem.open(db_path, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(50))))
        _search(memory, "Priya moved the Windows installer")  # the memo knows the head and these terms
        landed = {}
        embedder._write = lambda: landed.update(head=memory.remember("zanzibar Priya quokka").memory)
        embedder.queries = 0
        page = _search(memory, "zanzibar Priya")  # 'zanzibar' is new: the memo must read it, after the write
        assert embedder.queries == 1  # the second attempt reuses the query's vector
        assert {hit.citation.revision for hit in page.hits} == {landed["head"].revision}
        assert "zanzibar Priya quokka" in [hit.text for hit in page.hits]


def test_the_lazy_snapshot_refuses_to_read_after_a_write_began(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("alpha beta")
        backend = runtime.backend
        with backend.reading():  # fills the memo
            backend.vector_status("s")
            backend.candidates("s", fts_terms=["alpha"], query_vector=None, limit=5)
        with pytest.raises(SnapshotMoved), backend.reading():
            backend.vector_status("s")  # from the memo: no statement
            memory.remember("gamma delta")
            backend.candidates("s", fts_terms=["gamma"], query_vector=None, limit=5)
        with backend.reading():  # the retry: a plain snapshot, current
            found = backend.candidates("s", fts_terms=["gamma"], query_vector=None, limit=5)
        assert len(found.fts) == 1


def test_hits_built_without_validation_equal_validated_ones(db_path):
    from pcmem.types.memory import Citation
    from pcmem.types.search import MemoryHit

    with pcmem.open(db_path, embedder=TextHashEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=(NewEntry(text="Priya moved the installer", metadata={"a": [1]}),
                                                 NewEntry(text="Priya reviewed the budget"))))
        page = _search(memory, "Priya installer")
        assert page.hits
        for hit in page.hits:
            assert hit == MemoryHit.model_validate(hit.model_dump())
            assert type(hit.citation) is Citation and type(hit.score) is float and isinstance(hit.matched_by, tuple)
        page.hits[0].metadata["a"] = "changed by a caller"  # a hit's metadata is its own, not the cached version's
        assert _search(memory, "Priya installer").hits[0].metadata == {"a": [1]}


def test_a_cold_search_reads_what_the_memo_lacks_in_one_statement(db_path, monkeypatch):
    with pcmem.open(db_path, embedder=TextHashEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(200))))
        _search(memory, "Priya moved the Windows installer")  # the scope's views are loaded
        statements = _count_statements(runtime.backend, monkeypatch)
        _search(memory, "the quarterly roadmap was measured")  # new terms and candidates, the views are current
        assert statements == ["SELECT", "SELECT"]  # the terms' statistics, the versions not cached: no BEGIN/COMMIT


def test_a_closed_store_answers_no_search_from_the_memo(db_path):
    from pcmem.errors import StoreError

    runtime = pcmem.SyncRuntime(DuckDBBackend(db_path))
    memory = runtime.memory.for_scope("s")
    memory.remember("alpha beta")
    assert _search(memory, "alpha", "fts").hits  # the memo knows everything this search needs now
    runtime.backend.close()
    with pytest.raises(StoreError, match="closed"):
        _search(memory, "alpha", "fts")


def test_a_search_beside_an_uncommitted_write_is_answered_from_the_memo(db_path, monkeypatch):
    # Readers never see an uncommitted write (MVCC), so the memo of the last commit stays true until the next COMMIT
    # begins: a search on another thread while a write transaction is open runs no statement (issue #30: four
    # threads, one of them writing, must not all fall back to plain snapshots), and the commit is seen right after.
    import threading

    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(50))))
        before = _search(memory, "Priya moved the Windows installer", "fts")
        opened, release, done = threading.Event(), threading.Event(), threading.Event()

        def write() -> None:
            with runtime.backend.write("s"):
                opened.set()
                release.wait(10)
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        try:
            assert opened.wait(10)
            statements = _count_statements(runtime.backend, monkeypatch)
            assert _search(memory, "Priya moved the Windows installer", "fts") == before
            assert statements == []
        finally:
            release.set()
            writer.join(10)
        assert done.is_set()
        _search(memory, "Priya moved the Windows installer", "fts")
        assert statements  # the COMMIT moved the clock: the next search reads the file again


def test_a_search_after_a_write_brings_its_views_up_without_a_transaction(db_path, monkeypatch):
    # What a search reads after a write (the new head, the terms' statistics, the entry events since its views'
    # revision, the new documents' postings, the page's versions) are single statements, each checked against the
    # write clock: no BEGIN / pin / COMMIT round trips around them (issue #30: the search after every write).
    with pcmem.open(db_path, embedder=TextHashEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(200))))
        _search(memory, "Priya moved the Windows installer")  # both views loaded
        memory.remember("Priya moved the zanzibar installer")
        statements = _count_statements(runtime.backend, monkeypatch)
        page = _search(memory, "Priya moved the zanzibar installer")
        assert page.hits[0].text == "Priya moved the zanzibar installer"
        assert "BEGIN" not in statements and "COMMIT" not in statements
        assert statements and set(statements) == {"SELECT"}


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_an_unfiltered_search_reads_only_its_pages_versions(db_path, monkeypatch, mode):
    # An unfiltered page needs the versions of its hits, not of every candidate of both channels (~40 each): reading
    # 40 versions cost ~3x reading 10 at 1,000 entries (issue #30, a search with terms new to the memo). A filter
    # still reads every candidate's version: it must see them before the cut.
    from pcmem.store.duckdb import reads

    requested: list[str] = []
    read = reads.entry_versions

    def recording(cursor, ids):
        requested.extend(ids)
        return read(cursor, ids)

    with pcmem.open(db_path, embedder=TextHashEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t, metadata={"n": i % 2})
                                                      for i, t in enumerate(sentences(200)))))
        monkeypatch.setattr(reads, "entry_versions", recording)
        page = memory.search(SearchMemoryRequest(query="Priya moved the Windows installer", mode=mode, limit=3))
        assert len(page.hits) == 3
        assert sorted(requested) == sorted(hit.citation.entry_version_id for hit in page.hits)
        requested.clear()
        filtered = memory.search(SearchMemoryRequest(query="the quarterly roadmap was measured", mode=mode, limit=3,
                                                     metadata={"n": 1}))
        assert filtered.hits and all(hit.metadata == {"n": 1} for hit in filtered.hits)
        assert len(requested) > len(filtered.hits)


def test_terms_new_to_the_memo_are_read_without_the_totals_it_knows(db_path, monkeypatch):
    # Within one write generation the index totals (documents, average length, index generation) stand still: a
    # search with new terms reads only those terms' ids and frequencies, one statement over the dictionary, not the
    # totals again (issue #30: the full-text search with terms new to the memo).
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(200))))
        first = _search(memory, "Priya moved the Windows installer", "fts")
        assert first.hits
        sql: list[str] = []
        pool = runtime.backend._connections
        lend = pool.cursor

        @contextmanager
        def recording():
            with lend() as cursor:
                yield _CountingCursor(cursor, sql)

        monkeypatch.setattr(pool, "cursor", recording)
        monkeypatch.setattr(_CountingCursor, "execute", lambda self, text, *a, **k: (
            sql.append(" ".join(text.split())), self._cursor.execute(text, *a, **k), self)[2])
        page = _search(memory, "the quarterly roadmap was measured", "fts")
        terms_read = [text for text in sql if ".dict" in text]
        assert len(terms_read) == 1 and ".stats" not in terms_read[0] and "pcmem_meta" not in terms_read[0]
        with pcmem.SyncRuntime(DuckDBBackend(db_path)) as fresh:  # the same page from a backend with no memo yet
            assert page == _search(fresh.memory.for_scope("s"), "the quarterly roadmap was measured", "fts")


def test_threads_behind_one_write_read_the_new_head_and_totals_once(db_path, monkeypatch):
    # After a write of another scope the memo knows only that scope's head: every searching thread's next search
    # misses this scope's head and the index totals. One thread reads each; the others wait for it. Deterministic:
    # the first reader holds on until a second thread reads the same, or 1 s passed.
    import threading

    from thread_probes import count_reads_held_open

    from pcmem.store.duckdb import reads, search_reads

    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in sentences(50))))
        _search(memory, "Priya moved the Windows installer", "fts")
        runtime.memory.for_scope("t").remember("Priya moved the zanzibar installer")
        calls = count_reads_held_open(monkeypatch,
                                      ((reads, "head_and_profile"), (search_reads, "read_index_terms")))
        pages = []
        threads = [threading.Thread(target=lambda: pages.append(_search(memory, "Priya installer", "fts")))
                   for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(pages) == 2 and pages[0] == pages[1]
        assert pages[0].hits[0].citation.revision == memory.head().revision
        assert calls == {"head_and_profile": [1], "read_index_terms": [1]}
