"""Issue 32 item 12: opening a big scope (or stepping to a past revision read whole) shows its first page while the
rest is read. The entries screen waited for the whole manifest, whose read builds an object per entry (most of a
second at 10,000 entries, seconds under load), before it drew a row. Real stores, Textual's pilot."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem_tui import manifests, session
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
    with pcmem.open(tmp_path / "open.duckdb", embedder=None) as runtime:
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
    monkeypatch.setattr(session, "FIRST_PAGE_FROM", BIG, raising=False)  # 150 entries stand for a big scope
    app = make_app(runtime)
    async with app.run_test(size=SIZE) as pilot:
        await _open_big(pilot, app)
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


async def test_a_reload_keeps_the_rows_on_screen_and_a_step_keeps_the_cursor_on_its_entry(runtime, monkeypatch):
    """A first page is for a screen that has no rows of that revision yet: a reload after an outside write read
    whole (more changes than a patch) kept showing the rows it had until the whole manifest was there, instead of
    shrinking the list to one page and moving the cursor; a step to a revision read whole put the cursor back on
    its entry once the rest came, though the first page did not hold it."""
    reading_whole, rest_may_come = threading.Event(), threading.Event()
    rest_may_come.set()
    whole = manifests._whole

    def held_whole(*args, **kwargs):
        reading_whole.set()
        assert rest_may_come.wait(60)
        return whole(*args, **kwargs)

    monkeypatch.setattr(manifests, "_whole", held_whole)
    monkeypatch.setattr(session, "FIRST_PAGE_FROM", BIG)
    app = make_app(runtime)
    async with app.run_test(size=SIZE) as pilot:
        await _open_big(pilot, app)
        await _until(pilot, lambda: isinstance(app.screen, EntriesScreen) and app.screen.manifest is not None
                     and app.screen.manifest.complete)
        screen, table = app.screen, app.screen.query_one(ListTable)
        table.move_cursor(row=120)  # past the first page
        chosen = table.cursor_key
        runtime.memory.for_scope("big").remember(RememberRequest(entries=tuple(
            NewEntry(text=f"outside note {i}") for i in range(60))))
        reading_whole.clear(), rest_may_come.clear()
        screen.refresh_from_store()
        await _until(pilot, reading_whole.is_set)
        await pilot.pause()
        assert table.row_count == BIG and table.cursor_key == chosen  # the rows read before, still
        rest_may_come.set()
        await _until(pilot, lambda: table.row_count == BIG + 60)
        assert table.cursor_key == chosen
        await pilot.press("left_square_bracket")  # revision 2: 60 changes, read whole again
        await _until(pilot, lambda: screen.manifest.revision == 2 and screen.manifest.complete)
        await pilot.pause()
        assert table.row_count == BIG and table.cursor_key == chosen


async def test_a_small_scope_is_read_whole_at_once(runtime, monkeypatch):
    """Below a thousand entries a whole read costs about what a page costs: no first page, one draw."""
    shown: list[bool] = []
    loaded = EntriesScreen.on_manifest_loaded
    monkeypatch.setattr(EntriesScreen, "on_manifest_loaded",
                        lambda self, message: (shown.append(message.value.complete), loaded(self, message))[1])
    app = make_app(runtime)
    async with app.run_test(size=SIZE) as pilot:
        await _open_big(pilot, app)
        await _until(pilot, lambda: isinstance(app.screen, EntriesScreen) and app.screen.manifest is not None)
        await pilot.pause()
        assert shown == [True] and app.screen.query_one(ListTable).row_count == BIG


FIRST_SEARCH = """
import asyncio, sys
from pcmem_tui.app import make_app

async def main(path):
    app = make_app(path, embedder=None)
    async with app.run_test(size=(120, 36)) as pilot:
        while type(app.screen).__name__ != "ScopesScreen" or not any(t.row_count for t in app.screen.query("ListTable")):
            await pilot.pause(0.02)
        # what start-up warms in the background, once the first screen is drawn (the old app had no such flag)
        while not getattr(app.session, "reads_warm", True):
            await pilot.pause(0.02)
        before = set(sys.modules)
        app.session.search(__import__("pcmem_tui.session").session.SearchForm(scope="small", query="note"),
                           lambda *progress: None)
        print(" ".join(sorted(name for name in set(sys.modules) - before if "." not in name)))

asyncio.run(main(sys.argv[1]))
"""


def test_the_first_search_of_a_process_pays_nothing_a_later_one_does_not(runtime, tmp_path):
    """The first full-text search in a fresh process imported numpy and built pydantic's validators for hits
    (0.2-0.4 s beside a later search's ~20 ms); the TUI now does that in the background once the first screen is
    drawn, as it loads the embedder. A fresh process, so nothing is imported already."""
    runtime.close()  # the TUI's process opens the file itself (as its owner)
    path = tmp_path / "open.duckdb"
    result = subprocess.run([sys.executable, "-c", FIRST_SEARCH, str(path)], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1:] in ([], [""])  # no package imported by the first search


async def _open_big(pilot, app) -> None:  # noqa: ANN001 - Textual's pilot and the app under test
    """From the scopes list, open the scope named ``big`` (its row found by name, not by position)."""
    await _until(pilot, lambda: app.screen.query(ListTable) and "big" in app.screen.query_one(ListTable).row_keys)
    table = app.screen.query_one(ListTable)
    table.move_cursor(row=table.row_keys.index("big"))
    await pilot.press("enter")
