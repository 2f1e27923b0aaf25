"""One round of the file's chaos trials (issue #26): three names of one file, logs that are not the store's, forged
cursors — every acknowledged write found, every refusal typed, `check` clean. `pcmem bench chaos` runs more."""

from __future__ import annotations

import pytest

from pcmem_bench import file_chaos


@pytest.mark.parametrize("trial", [file_chaos.two_names_trial, file_chaos.foreign_log_trial,
                                   file_chaos.forged_cursor_trial, file_chaos.stop_signal_trial])
def test_a_file_chaos_trial_keeps_everything_acknowledged_and_types_every_refusal(tmp_path, trial):
    tally = trial(tmp_path, seed=1)
    assert tally.ok, tally.as_dict()
    assert tally.acknowledged >= 1 and tally.found == tally.acknowledged
    assert tally.checks >= 1


@pytest.mark.parametrize("seed", range(3))
def test_a_flipped_bit_in_any_live_block_is_never_called_ok(tmp_path, seed):
    tally = file_chaos.flipped_bit_trial(tmp_path, seed)
    assert tally.ok, tally.as_dict()
    assert sum(tally.typed_errors.values()) == 1
