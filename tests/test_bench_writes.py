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
