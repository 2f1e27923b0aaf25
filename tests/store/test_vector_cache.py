"""The in-process vector matrix gives the same candidates as DuckDB's exact array_cosine_distance scan."""

from __future__ import annotations

import pytest
from oracles import exact_vector_search, reading

import pcmem
from pcmem import NewEntry, ReactivateRequest, RememberRequest, RetireRequest, ReviseRequest
from pcmem.embedding.presets import default_embedder

SENTENCES = [f"Note {i}: the team discussed topic {i % 7} with {name}." for i, name in
             enumerate(["Priya", "Marco", "Tanaka", "Lea", "Omar", "Ines"] * 5)]


def _both(runtime, scope: str, query: str, limit: int = 10):
    backend = runtime.backend
    vector = default_embedder().embed_query(query)
    found = backend.candidates(scope, fts_terms=None, query_vector=vector, limit=limit)
    with reading(backend.path) as db:
        exact = exact_vector_search(db, found.memory.artifact_id, vector, limit)
    return found.vector, exact


def _same(cached, exact):
    assert [c.entry_version_id for c in cached] == [c.entry_version_id for c in exact]
    for a, b in zip(cached, exact):
        assert a.score == pytest.approx(b.score, abs=1e-5)


def test_matrix_matches_exact_scan_through_every_kind_of_write(db_path):
    with pcmem.open(db_path) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=t)
                                                      for i, t in enumerate(SENTENCES))))
        _same(*_both(runtime, "s", "what did Priya discuss?"))
        memory.revise(ReviseRequest(entry_id="e0", text="Priya now leads the design review.", expected_revision=1))
        memory.retire(RetireRequest(entry_id="e6", expected_revision=2))
        memory.remember("A brand new note about Priya's design review.")
        _same(*_both(runtime, "s", "Priya design review", limit=40))
        memory.reactivate(ReactivateRequest(entry_id="e6", expected_revision=4))
        _same(*_both(runtime, "s", "Priya design review", limit=40))


def test_writes_through_another_handle_are_picked_up_by_events(db_path):
    with pcmem.open(db_path) as reader:
        memory = reader.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in SENTENCES[:10])))
        _same(*_both(reader, "s", "topic 3"))
        with pcmem.open(db_path) as writer:  # a second backend, as another process would be
            writer.memory.for_scope("s").remember("Topic three was closed by Marco on Friday.")
        cached, exact = _both(reader, "s", "topic three closed")
        _same(cached, exact)
        assert "Topic three" in memory.get_entry(cached[0].entry_id).entry.text


def test_the_blas_preselection_keeps_every_row_einsum_would_rank():
    """The fast pass may only drop rows that cannot rank: the result equals exact scores over every row."""
    import numpy as np

    from pcmem.store.duckdb.vector_cache import _rows_that_can_rank, _similarities

    rng = np.random.default_rng(3)
    for dimension in (8, 384, 768):
        base = rng.standard_normal((2000, dimension)).astype(np.float32)
        base[::7] = base[5]  # many identical rows at different positions: exact ties
        base[1::11] = base[5] + 1e-6  # and rows a hair apart
        matrix = base / np.linalg.norm(base, axis=1, keepdims=True)
        for _ in range(5):
            query = matrix[5] + 0.01 * rng.standard_normal(dimension).astype(np.float32)
            query /= np.linalg.norm(query)
            for limit in (1, 10, 128):
                exact = _similarities(matrix, query)
                expected = sorted(range(len(matrix)), key=lambda r: (-exact[r], r))[:limit]
                rows = _rows_that_can_rank(matrix, query, limit)
                fast = _similarities(matrix[rows], query)
                got = [int(rows[i]) for i in sorted(range(len(rows)), key=lambda i: (-fast[i], int(rows[i])))][:limit]
                assert got == expected
                assert [exact[r] for r in got] == [fast[i] for i in sorted(range(len(rows)),
                                                    key=lambda i: (-fast[i], int(rows[i])))][:limit]



def test_a_scope_loads_its_own_vectors_not_the_whole_table(tmp_path):
    """A scope written before and after another (its ids span the other's) loaded through a join that read every
    stored vector into DuckDB's buffers: ids share their first 8 bytes, all DuckDB's statistics keep of a string, so
    no block was skipped (a 1,000-entry scope of a 1,000,000-entry store read 1.4 GB). It now reads them by key."""
    from pcmem.testing import HashEmbedder

    path, embedder, bulk = tmp_path / "spread.duckdb", HashEmbedder(dimension=384, by="text"), 8000
    with pcmem.open(path, embedder=embedder) as runtime:
        small = runtime.memory.for_scope("small")
        small.remember(RememberRequest(entries=tuple(NewEntry(text=f"Early note {i} on the garden.") for i in range(150))))
        runtime.memory.for_scope("big").remember(RememberRequest(entries=tuple(
            NewEntry(text=f"Bulk note {i} about the harbour.") for i in range(bulk))))
        small.remember(RememberRequest(entries=tuple(NewEntry(text=f"Late note {i} on the garden.") for i in range(150))))
    with pcmem.open(path, embedder=embedder) as runtime:
        hits = runtime.memory.for_scope("small").search("Late note 7 on the garden.", mode="vector").hits
        with runtime.backend._transaction() as cursor:
            (buffered,) = cursor.execute(
                "SELECT memory_usage_bytes FROM duckdb_memory() WHERE tag = 'BASE_TABLE'").fetchone()
    assert [hit.text for hit in hits] == ["Late note 7 on the garden."]  # one direction per text: only itself
    assert buffered < bulk * 384 * 4, f"{buffered / 2**20:.1f} MB of table blocks read: the other scope's vectors too"
