"""Issue 32 item 12: opening a big scope (or stepping to a past revision read whole) shows its first page while the
rest is read. The entries screen waited for the whole manifest, whose read builds an object per entry (most of a
second at 10,000 entries, seconds under load), before it drew a row. Real stores, Textual's pilot."""

from __future__ import annotations

import threading
import time

import pytest

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem_tui import manifests
from pcmem_tui.app import make_app
from pcmem_tui.manifests import Manifests
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.table import ListTable

SIZE = (120, 36)
BIG = 150  # more than the first page
FIRST_PAGE = 100  # the most one page of pcmem's list holds


@pytest.fixture
def runtime(tmp_path):
    """Scope ``big``: 150 entries remembered in two revisions (100, then 50); scope ``small``: 3."""
    with pcmem.open_sync(tmp_path / "open.duckdb", embedder=None) as runtime:
        big = runtime.memory.for_scope("big")
        for start, stop in ((0, 100), (100, BIG)):
            big.remember(RememberRequest(entries=tuple(NewEntry(text=f"big note #{i}") for i in range(start, stop))))
        runtime.memory.for_scope("small").remember(RememberRequest(entries=tuple(
            NewEntry(text=f"small note {i}") for i in range(3))))
        yield runtime


def test_a_whole_read_gives_its_first_page_first_and_keeps_only_the_whole(runtime):
    pages: list[manifests.Manifest] = []
    read = Manifests()
    whole = read.read(runtime.memory.for_scope("big"), None, pages.append)
    assert [len(page.entries) for page in pages] == [FIRST_PAGE] and not pages[0].complete
    assert pages[0].entries == whole.entries[:FIRST_PAGE] and pages[0].revision == whole.revision == 2
    assert len(whole.entries) == BIG and whole.complete
    again: list[manifests.Manifest] = []
    assert read.read(runtime.memory.for_scope("big"), None, again.append).entries == whole.entries
    assert again == []  # the kept manifest is whole: nothing was read again
    assert read.read(runtime.memory.for_scope("small"), None, again.append).complete and again == []


async def _until(pilot, done, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the screen did not get there"
        await pilot.pause(0.02)


def _title(screen: EntriesScreen) -> str:
    return str(screen.query_one("#title").render())


async def test_a_big_scope_shows_its_first_page_while_the_rest_is_read(runtime, monkeypatch):
    """The rest of the read is held back until the screen has shown the first page; a filter typed meanwhile
    applies to every entry once they are all there."""
    rest_may_come = threading.Event()
    whole = getattr(manifests, "_whole", None)

    def held_whole(*args, **kwargs):
        assert rest_may_come.wait(60)
        return whole(*args, **kwargs)

    monkeypatch.setattr(manifests, "_whole", held_whole, raising=False)  # (before: no first page, nothing held)
    app = make_app(runtime)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.screen.query(ListTable) and "big" in app.screen.query_one(ListTable).row_keys)
        table = app.screen.query_one(ListTable)
        table.move_cursor(row=table.row_keys.index("big"))
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, EntriesScreen) and app.screen.query_one(ListTable).row_count)
        screen = app.screen
        table = screen.query_one(ListTable)
        assert table.row_count == FIRST_PAGE and "reading the rest" in _title(screen)
        await pilot.press("slash", *"#12", "enter")  # "big note #12" and "#120".."#129" (in the rest)
        assert table.row_count == 1
        rest_may_come.set()
        await _until(pilot, lambda: screen.manifest is not None and screen.manifest.complete)
        await pilot.pause()
        assert table.row_count == 11 and table.filter == "#12"
        assert "150 active" in _title(screen) and "reading the rest" not in _title(screen)
