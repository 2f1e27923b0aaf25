"""The issue-16 campaign in small: every scenario of `pcmem bench chaos` runs and reports no loss, no untyped error
and a clean check (the full campaign is `pcmem bench chaos`; speed figures live there, not here)."""

from __future__ import annotations

from pcmem_bench import chaos, hostile


def test_threads_on_one_runtime_and_on_two(tmp_path):
    for name, options in (("x", {}), ("r", {"runtimes": 2})):
        tally = chaos.threads_scenario(tmp_path / f"{name}.duckdb", threads=4, ops=6, **options)
        assert tally.ok and tally.acknowledged > 0, tally.as_dict()


def test_async_tasks(tmp_path):
    tally = chaos.async_scenario(tmp_path / "a.duckdb", tasks=12, ops=2)
    assert tally.ok and tally.acknowledged == 12, tally.as_dict()


def test_damaged_log_is_refused_typed(tmp_path):
    tally = chaos.damaged_wal_trial(tmp_path / "w.duckdb", 3)  # seed 3 zeroes the header
    assert tally.ok and tally.typed_errors["StoreWALError"] == 1, tally.as_dict()


def test_a_log_cut_short_opens_with_a_copy_kept(tmp_path):
    tally = chaos.damaged_wal_trial(tmp_path / "w.duckdb", 2)  # seed 2 cuts the log in half
    assert tally.ok and not tally.typed_errors and tally.checks == 1, tally.as_dict()


def test_hostile_input_a_few_hundred_cases(tmp_path):
    from pcmem.cli import main

    tally = hostile.run(tmp_path, 300, main, seed=1)
    assert tally.operations >= 300 and not tally.untyped_errors, tally.untyped_errors[:5]


def test_every_retried_write_whose_answer_a_proxy_drops_is_applied_once(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setenv("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="pcm", dir="/tmp"))  # a short socket path
    tally = chaos.retry_scenario(tmp_path, 1)
    assert tally.ok and tally.operations == tally.found == 18, tally.as_dict()
    assert (tally.applied_twice, tally.wrong_outcomes) == (0, 0)
