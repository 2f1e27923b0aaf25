"""SIGKILL during writes: the store opens, `check` passes, every acknowledged write is there, no half-written
revision is visible, and a killed import leaves all of its file or none. A few trials here; `pcmem bench crash
--trials 20` runs the long campaign with the same harness."""

from __future__ import annotations

import pytest

from pcmem.bench import crash


@pytest.mark.parametrize("trial", range(3))
def test_sigkill_during_a_write_stream_loses_nothing_acknowledged(tmp_path, trial):
    verified, problem = crash.stream_trial(tmp_path / "crash.duckdb", trial)
    assert problem is None
    assert verified >= 3


def test_sigkill_during_import_is_all_or_nothing(tmp_path):
    midway, problem = crash.import_trial(tmp_path / "import.duckdb", seed=1)
    assert problem is None
