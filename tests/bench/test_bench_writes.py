"""``python -m pcmem_bench.writes ratio``: remember against a durable FTS5 insert and DuckDB's own floor, same run."""

from __future__ import annotations

import pytest

from pcmem_bench.writes import remember_vs_fts5


def test_the_ratio_reports_duckdbs_floor_beside_the_fts5_insert(tmp_path):
    result = remember_vs_fts5(30, tmp_path, rounds=1, per_round=3)
    assert result["samples"] == 3
    for side in ("remember_ms_p50", "fts5_insert_ms_p50", "duckdb_floor_ms_p50", "duckdb_floor_cpu_ms_p50"):
        assert result[side] > 0, side
    assert result["ratio_vs_duckdb_floor"] == pytest.approx(result["remember_ms_p50"] / result["duckdb_floor_ms_p50"], rel=0.01)
    assert list(tmp_path.iterdir()) == []  # every store, log and table it made is gone


def test_the_breakdown_times_each_statement_of_a_remember_and_leaves_nothing_behind(tmp_path):
    from pcmem.store.duckdb import connection
    from pcmem_bench.writes import remember_parts

    quiet = connection.quiet
    result = remember_parts(30, tmp_path, samples=3)
    assert connection.quiet is quiet  # stores opened later are not timed
    parts = result["parts_ms_p50"]
    for part in ("BEGIN", "INSERT INTO embeddings", "UPDATE fts_main_fts_docs.stats", "COMMIT"):
        assert parts[part] > 0, part
    assert 0 < result["python_ms_p50"] < result["remember_ms_p50"]
    assert list(tmp_path.iterdir()) == []


def test_write_modes_report_each_way_against_the_same_runs_references(tmp_path):
    """``pcmem bench writes``: per entry, a remember, a keyed one, threads together (group commit), an import."""
    from pcmem_bench.write_modes import measure

    result = measure(tmp_path, size=30, rounds=1, per_round=2, threads=3, batch=20)
    for side in ("remember", "keyed_remember", "group", "import", "fts5_insert", "fts5_batch", "duckdb_floor"):
        assert result[f"{side}_ms"] > 0 and result[f"{side}_cpu_ms"] > 0, side
    assert result["import_vs_fts5_batch"] == pytest.approx(result["import_ms"] / result["fts5_batch_ms"], rel=0.01)
    assert result["write_groups"]["remembers_from_threads"] == 6
