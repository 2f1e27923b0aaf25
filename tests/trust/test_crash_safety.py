"""SIGKILL during writes: the store opens, `check` passes, every acknowledged write is there, no half-written
revision is visible, and an import killed inside its write transaction leaves none of its file. A few trials here;
`pcmem bench crash --trials 20` runs the long campaign with the same harness."""

from __future__ import annotations

import pytest

from pcmem_bench import crash


@pytest.mark.parametrize("trial", range(3))
def test_sigkill_during_a_write_stream_loses_nothing_acknowledged(tmp_path, trial):
    verified, problem = crash.stream_trial(tmp_path / "crash.duckdb", trial)
    assert problem is None
    assert verified >= 3


@pytest.mark.parametrize("seed", range(2))
def test_sigkill_inside_the_import_transaction_leaves_nothing(tmp_path, seed):
    inside, problem = crash.import_trial(tmp_path / "import.duckdb", seed=seed)
    assert inside, "the kill must land inside the write transaction, or the trial proves nothing"
    assert problem is None


def test_every_pre_crash_entry_can_be_changed_after_a_kill(tmp_path):
    """Issue #26: after an unclean exit DuckDB lost replayed index rows, and every pre-crash entry refused writes."""
    written, changed, problems = crash.writable_trial(tmp_path / "keyed.duckdb", seed=7)
    assert problems == []
    assert written >= 3 and changed == written
