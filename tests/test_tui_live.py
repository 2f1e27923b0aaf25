"""The TUI kept open all day beside agents (issue #32): what it shows while the store waits or fails, cancelling
work, drafts, a mistyped path, big scopes and the keys every screen shares.

Real stores (the seeded template of ``test_tui``), real subprocesses holding the file, Textual's pilot; no timings.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_tui import (  # noqa: F401 - fixtures used by name
    SIZE,
    _no_model_from_the_environment,
    app,
    open_entry,
    open_scope,
    open_store,
    row_keys,
    rows,
    runtime,
    search,
    seeded_template,
    settle,
    status,
    store_path,
    text_of,
)
from textual.widgets import DataTable, ProgressBar

from pcmem_tui.app import make_app
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.widgets import StoreBar, WorkProgress

HOLD = """
import sys, pcmem
runtime = pcmem.open_sync(sys.argv[1], embedder=None)  # not shared: holds the file until told to stop
print("held", flush=True)
sys.stdin.readline()
runtime.close()
print("released", flush=True)
"""


class Holder:
    """Another process that holds the store file exclusively (like ``pcmem mcp`` today) until released."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "released"
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture
def holder_for():
    holders: list[Holder] = []

    def start(path: Path) -> Holder:
        holders.append(Holder(path))
        return holders[-1]

    yield start
    for holder in holders:
        holder.stop()


def store_bar(app) -> str:
    return str(app.screen.query_one(StoreBar).render())


# --- item 5: the busy strip ------------------------------------------------------------------------------------------


async def test_the_busy_strip_goes_away_after_picking_a_revision_stepping_and_filtering(app, monkeypatch):
    """#32.5: a load replaced at once by another (picking a revision reloads, and so does the screen's resume)
    never sent Textual's "cancelled" message, so the strip stayed up with an animated bar for the whole session."""
    monkeypatch.setattr(StoreScreen, "BUSY_AFTER", 0.001)  # every store call shows the strip while it runs
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.manifest.revision == 2
        for keys in (("h",), ("left_square_bracket",), ("right_square_bracket",), ("a",), ("f", "t", "escape")):
            await pilot.press(*keys)
            await settle(pilot)
            strip = screen.query_one(WorkProgress)
            assert not strip.display, f"the strip still shows {strip.stage!r} after {keys}"
        # nothing animates while idle: Textual's indeterminate bar redraws 15 times a second even when hidden
        assert all(bar.total is not None for bar in app.screen.query(ProgressBar))


# --- item 2: stale data and recovery ---------------------------------------------------------------------------------


async def test_a_held_store_is_labelled_stale_and_the_screen_recovers_when_the_holder_lets_go(store_path, holder_for):
    """#32.2: a read that fails because another process holds the file leaves the screen labelled stale (who holds
    it, when the data was read); when the holder releases the file the screen reloads without ``r``."""
    app = make_app(store_path, embedder=None, lock_timeout=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert store_bar(app).startswith(f"{store_path} · shared") and "live · read " in store_bar(app)
        holder = holder_for(store_path)
        await pilot.press("enter")  # open notes (the first scope) while the file is held
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EntriesScreen) and screen.manifest is None
        assert f"held by process {holder.process.pid}" in status(app)
        assert "⚠ stale" in store_bar(app) and f"held by process {holder.process.pid}" in store_bar(app)
        assert "stale" in text_of(app, "#title")
        app.watch_store()  # what the 1-second timer calls: still held, still stale
        await settle(pilot)
        assert screen.manifest is None and "⚠ stale" in store_bar(app)
        holder.release()
        app.watch_store()
        await settle(pilot)
        assert row_keys(screen.query_one(DataTable)) == ["n1", "n2"]
        assert "live · read " in store_bar(app) and "stale" not in text_of(app, "#title")


async def test_opening_a_held_store_waits_for_it_and_opens_when_released(store_path, holder_for, monkeypatch):
    holder = holder_for(store_path)
    app = make_app(store_path, embedder=None, lock_timeout=0.2)
    monkeypatch.setattr(app, "OPEN_RETRY", 3600.0)  # the test retries by hand
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is None and f"held by process {holder.process.pid}" not in text_of(app, "#opening")
        assert "waiting for the store" in text_of(app, "#opening") and str(holder.process.pid) in text_of(app, "#opening")
        holder.release()
        app.open_store(store_path)
        await settle(pilot)
        assert app.session is not None and row_keys(app.screen.query_one(DataTable)) == ["notes", "pcmem-demo"]
