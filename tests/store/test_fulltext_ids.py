"""The document and term ids a point write gives the full-text index (``fts_index.IdFloor``, issue #30).

A held store — the file is this process's alone — takes its next ids from the floor the last write left, without
reading the index; every other way ids can be taken (another backend of the file in this process, an import that
numbers its own, another process writing through this one, a write that rolled back) must leave them unique. ``pcmem check``
reports an id used twice.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import pytest
from statement_log import statements_starting

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.store.duckdb import DuckDBBackend, fts_index
from pcmem.testing import HashEmbedder


def _lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements that look the written terms up in the index, on stores opened after this call."""
    return statements_starting(monkeypatch, f"SELECT 0, term, termid FROM {fts_index.SCHEMA}.dict")


def _healthy(runtime: pcmem.SyncRuntime, scope: str, words: list[str]) -> None:
    """``pcmem check`` finds nothing wrong, and each word finds its own entry."""
    report = runtime.backend.check()
    assert not report.problems, report.problems
    memory = runtime.memory.for_scope(scope)
    for word in words:
        hits = memory.search(pcmem.SearchMemoryRequest(query=word, mode="fts")).hits
        assert [hit.text for hit in hits] == [f"a note about {word}"], word


def test_a_held_store_takes_its_next_ids_without_reading_the_index(db_path, monkeypatch):
    lookups = _lookups(monkeypatch)
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("a note about otters")
        memory.remember("a note about badgers")
        memory.remember("a note about herons")
        _healthy(runtime, "s", ["otters", "badgers", "herons"])
    assert "max(docid)" in lookups[0]  # a new backend reads them once
    assert not [lookup for lookup in lookups[1:] if "max(" in lookup], lookups[1:]


def test_two_backends_of_one_file_never_take_the_same_ids(db_path):
    first = pcmem.SyncRuntime(DuckDBBackend(db_path), embedder=HashEmbedder(dimension=8))
    second = pcmem.SyncRuntime(DuckDBBackend(db_path), embedder=HashEmbedder(dimension=8))
    words = ["otters", "badgers", "herons", "voles", "stoats", "newts"]
    with first, second:
        for n, word in enumerate(words):
            (first if n % 3 else second).memory.for_scope("s").remember(f"a note about {word}")
        _healthy(first, "s", words)


def test_an_import_between_point_writes_leaves_the_ids_unique(db_path):
    bulk = tuple(NewEntry(text=f"bulk entry {n} word{n}") for n in range(fts_index.POINT_WRITES + 10))
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("a note about otters")
        memory.remember(RememberRequest(entries=bulk))  # numbers its own ids, past the floor
        memory.remember("a note about badgers")
        _healthy(runtime, "s", ["otters", "badgers"])


def test_a_write_that_rolled_back_costs_a_gap_at_most(db_path, monkeypatch):
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("a note about otters")
        took = fts_index.IdFloor.took

        def took_then_failed(floor: fts_index.IdFloor, docid: int, termid: int) -> None:
            took(floor, docid, termid)
            raise RuntimeError("the write fails after taking its full-text ids")

        monkeypatch.setattr(fts_index.IdFloor, "took", took_then_failed)
        with pytest.raises(RuntimeError):
            memory.remember("a note about nothing kept")
        monkeypatch.setattr(fts_index.IdFloor, "took", took)
        memory.remember("a note about badgers")
        _healthy(runtime, "s", ["otters", "badgers"])
        assert not [hit for hit in memory.search(pcmem.SearchMemoryRequest(query="kept", mode="fts")).hits]


def test_the_ids_stay_right_when_another_process_writes_through_this_one(db_path):
    """Another process writes through this process (its owner): the write takes its ids from this backend's floor."""
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("a note about otters")
        program = textwrap.dedent(f"""
            import pcmem
            with pcmem.open({str(db_path)!r}, embedder=None) as runtime:
                assert runtime.owner_pid is not None  # a client: the write runs in the owner
                runtime.memory.for_scope("s").remember("a note about herons")
        """)
        subprocess.run([sys.executable, "-c", program], check=True, timeout=120)
        memory.remember("a note about badgers")
        _healthy(runtime, "s", ["otters", "herons", "badgers"])


def test_check_reports_a_document_id_used_twice(db_path):
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("a note about otters")
        memory.remember("a note about badgers")
        assert not runtime.backend.check().problems
    with duckdb.connect(str(db_path)) as db:
        db.execute(f"UPDATE {fts_index.SCHEMA}.docs SET docid = (SELECT min(docid) FROM {fts_index.SCHEMA}.docs)")
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        problems = runtime.backend.check().problems
    assert [p for p in problems if "ids are used twice" in p], problems
