"""A damaged store in the TUI (issue #45, item 6): the whole message wrapped, what ``pcmem check`` advises, and
retries that back off and stop instead of running for ever. A real DuckDB file with one block overwritten on disk.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tui_pilot import (
    SIZE,
    open_scope,
    settle,
)

import pcmem
from pcmem import ListRequest, NewEntry, PcmemError, RememberRequest
from pcmem_tui.app import make_app
from pcmem_tui.freshness import RETRY_AFTER
from pcmem_tui.messages import StoreStateChanged
from pcmem_tui.widgets import StatusLine, StoreBar

#: DuckDB's file header, then blocks of 256 KiB.
HEADER, BLOCK = 12288, 262144


def _reads(path: Path) -> tuple[bool, bool]:
    """Whether the scopes and the scope's list can be read."""
    def works(read: Callable[[pcmem.SyncRuntime], object]) -> bool:
        try:
            with pcmem.open(path, embedder=None) as runtime:
                read(runtime)
        except PcmemError:
            return False
        return True

    return (works(lambda runtime: runtime.memory.scopes()),
            works(lambda runtime: runtime.memory.for_scope("notes").list(ListRequest(state="all"))))


@pytest.fixture(scope="module")
def damaged_template(tmp_path_factory) -> Path:
    """A store whose scopes read well and whose "notes" list fails its checksum: one data block overwritten."""
    folder = tmp_path_factory.mktemp("damaged")
    good = folder / "good.duckdb"
    with pcmem.open(good, embedder=None) as runtime:
        runtime.memory.for_scope("notes").remember(RememberRequest(entries=tuple(
            NewEntry(text=f"Note {n}: " + "the text of a long note " * 80) for n in range(300))))
    damaged = folder / "damaged.duckdb"
    for block in range(1, good.stat().st_size // BLOCK):
        shutil.copy(good, damaged)
        with damaged.open("r+b") as file:
            file.seek(HEADER + block * BLOCK + 100)
            file.write(b"\xde\xad\xbe\xef" * 16)
        if _reads(damaged) == (True, False):
            return damaged
    pytest.fail("no block of the store breaks its list and leaves its scopes readable")


async def test_a_damaged_store_says_all_of_it_what_to_do_and_stops_retrying(damaged_template, tmp_path, monkeypatch):
    path = tmp_path / "memory.duckdb"
    shutil.copy(damaged_template, path)
    app = make_app(path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        line = screen.query_one(StatusLine)
        shown = str(line.render())
        assert "Corrupt database file" in shown and f"pcmem --db {path} check" in shown
        assert "restore the store from a backup" in shown and line.size.height > 1  # wrapped, not cut at the edge
        reads = []
        session = app.session
        manifest = session.manifest
        monkeypatch.setattr(session, "manifest", lambda *args, **kw: (reads.append(1), manifest(*args, **kw))[1])
        for _ in range(3 * len(RETRY_AFTER)):  # the watcher's ticks, each as if its backed-off wait had passed
            session.freshness.retry_at = 0.0
            app.watch_store()
            await settle(pilot)
        assert len(reads) == len(RETRY_AFTER) and session.freshness.gave_up
        screen.post_message(StoreStateChanged())
        await settle(pilot)
        assert "stopped retrying (r tries again)" in str(screen.query_one(StoreBar).render())
        await pilot.press("r")  # by hand: one more read
        await settle(pilot)
        assert len(reads) == len(RETRY_AFTER) + 1
