"""The TUI bench measures what it names (issue #32): ``j`` from a row it can leave, and the TUI as a client when a
real ``pcmem mcp`` holds the store first."""

from __future__ import annotations

import asyncio
import time

import pytest
from tui_pilot import (
    SIZE,
    open_scope,
    row_keys,
    settle,
)

from pcmem_bench import tui_timings as bench
from pcmem_tui.app import make_app
from pcmem_tui.table import ListTable


async def test_j_is_timed_to_the_next_row_and_refused_on_the_last_row(app):
    """The bench pressed ``j`` with the cursor on a 3,000-entry scope's last row, where it cannot move, and timed
    until the cursor's row changed: a writer's new row above moved it, so it measured the writer's 0.75 s interval
    (801 ms) instead of the key."""
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        table = app.screen.query_one(ListTable)
        keys = row_keys(table)
        table.move_cursor(row=0)
        assert await bench.press_down(pilot) >= 0 and table.cursor_key == keys[1]
        table.move_cursor(row=len(keys) - 1)
        with pytest.raises(ValueError, match="last row"):
            await bench.press_down(pilot)


async def test_beside_a_real_mcp_server_the_tui_is_its_client(store_path):
    """``--owner mcp``: the TUI's every interaction goes to the process that opened the store first."""
    server = bench.start_mcp_owner(store_path)
    try:
        app = make_app(store_path, embedder=None)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            role = app.session.store_role()
            assert role == f"client of process {server.pid}"
            bench._check_role(app, "client")
            with pytest.raises(RuntimeError, match="to be the store's owner"):
                bench._check_role(app, "owner")
    finally:
        bench.stop_mcp_owner(server)
    assert server.returncode == 0


async def test_the_small_pass_opens_its_own_scope_when_big_scopes_sort_first(tmp_path):
    """With ``--big`` the store's first scope row is "big-10000": the 500-entry pass opened (and stepped, searched
    and wrote in) that 10,000-entry scope, so its "open scope" and the rest were not the small store's figures."""
    path = tmp_path / "bench.duckdb"
    bench.seed(path, 8, embedder=None)
    bench.seed_big(path, 30, embedder=None)
    app = make_app(path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert row_keys(app.screen.query_one(ListTable))[0] == "big-30"
        assert await bench.open_scope(pilot, bench.SMALL_SCOPE) >= 0
        assert app.screen.scope == bench.SMALL_SCOPE == "ops"


async def test_the_loop_stall_probe_sees_a_handler_that_blocks_the_loop():
    """``longest loop stall while writing``: what a key waits behind. A 50 ms block of the loop cannot look shorter
    than 50 ms less the probe's 5 ms tick (a lower bound: the machine's load only adds to it)."""
    with bench.LoopStalls() as stalls:
        await asyncio.sleep(0.02)  # the probe is waiting on its timer
        time.sleep(0.05)  # a handler that holds the loop
        await asyncio.sleep(0.02)
    assert stalls.worst >= 45
