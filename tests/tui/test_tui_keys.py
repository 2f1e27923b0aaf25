"""Keys as a k9s/lazygit user expects them (issue #45): esc peels one layer at a time, focus never turns typing into
commands, lists page like less, every documented key does what it says, and the documented key table
(docs/getting-started/tui.md) is the app's.

Real stores (the seeded template of tests/tui/conftest.py), Textual's pilot; no timings.
"""

from __future__ import annotations

import re
from pathlib import Path

from docs_pages import section
from textual.binding import Binding
from textual.widgets import Input, Select
from tui_pilot import (
    SIZE,
    open_entry,
    open_scope,
    row_keys,
    search,
    settle,
    status,
)

import pcmem
from pcmem import NewEntry
from pcmem_tui.app import PcmemApp, make_app
from pcmem_tui.pager import Pager
from pcmem_tui.prompt import ListPrompt
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.dialogs import RememberScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.screens.trace import TraceScreen
from pcmem_tui.table import ListTable

ROOT = Path(__file__).resolve().parents[2]


# --- 4. esc peels one layer at a time -------------------------------------------------------------------------------


async def test_esc_clears_a_kept_filter_before_it_leaves_the_screen(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        await pilot.press("slash", *"tuesdays", "enter")
        assert row_keys(table) == ["release-day"] and app.focused is table
        await pilot.press("escape")  # the filter goes first…
        assert app.screen is screen and table.row_count == 18 and not screen.query_one(ListPrompt).display
        await pilot.press("escape")  # …then the screen
        assert isinstance(app.screen, ScopesScreen)


async def test_esc_in_text_scroll_mode_goes_back_to_the_history_first(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        screen = await open_entry(pilot, "release-day")
        await pilot.press("t")
        assert isinstance(app.focused, Pager)
        await pilot.press("escape")
        assert app.screen is screen and app.focused is screen.query_one("#history", ListTable)
        await pilot.press("escape")
        assert isinstance(app.screen, EntriesScreen)


async def test_ctrl_f_with_filters_set_goes_to_them_and_back(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await pilot.press("ctrl+f")
        kinds = app.screen.query_one("#kinds", Input)
        kinds.value = "fact"
        await pilot.press("ctrl+f")  # from inside the filters: back to the query (they stay shown while set)
        assert app.focused is app.screen.query_one("#query", Input)
        await pilot.press("ctrl+f")  # filters set: ctrl+f goes to them, not a hint
        assert app.focused is app.screen.query_one("#scopes", Input)


async def test_letters_typed_on_the_hits_go_to_the_query_not_to_commands(app):
    """Typing "decision, event" with the hits focused opened the trace (t) and copied a citation (c)."""
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await search(pilot, "Tuesdays")
        screen = app.screen
        assert isinstance(screen, SearchScreen) and app.focused is screen.query_one(ListTable)
        await pilot.press(*"decision, event")
        query = screen.query_one("#query", Input)
        assert app.screen is screen and query.value == "Tuesdaysdecision, event" and app.focused is query
        assert "OSC 52" not in status(app)
        query.value = "Tuesdays"
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("j", "k")  # the list's own keys keep their meaning
        assert app.focused is screen.query_one(ListTable) and query.value == "Tuesdays"


async def test_capital_s_in_a_text_field_types_an_s(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await pilot.press(*"Sync")
        assert app.screen.query_one("#query", Input).value == "Sync" and isinstance(app.screen, SearchScreen)


async def test_another_mode_searches_again(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await search(pilot, "Tuesdays", mode="fts")
        screen = app.screen
        assert screen.page.mode == "fts"
        screen.query_one("#mode", Select).value = "auto"  # no embedder here: auto runs full text, a new page
        first = screen.page
        await settle(pilot)
        assert screen.page is not None and screen.page is not first


async def test_lists_page_with_ctrl_d_u_f_b_and_space(app):
    async with app.run_test(size=(100, 14)) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        page = table.scrollable_content_region.height - 2
        half = (table.scrollable_content_region.height - 1) // 2
        for key, row in (("ctrl+d", half), ("ctrl+u", 0), ("ctrl+f", page), ("ctrl+b", 0), ("space", page)):
            await pilot.press(key)
            assert table.cursor_row == row, key


# --- 5. keys that do nothing or the wrong thing ---------------------------------------------------------------------


async def test_y_copies_the_citation_on_the_entries_list(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("y")
        citation = runtime.memory.for_scope("notes").get_entry("n1").citation
        assert status(app).startswith(f"sent {citation} to the terminal")


async def test_a_past_revision_offers_no_write_keys_but_says_why_when_pressed(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        shown = {binding.key for _, binding, enabled, _ in screen.active_bindings.values() if enabled and binding.show}
        assert not shown & {"n", "d"} and "h" in shown
        await pilot.press("n")
        assert app.screen is screen and "past revision and read-only" in status(app)


async def test_n_on_a_read_only_store_says_so_at_once_as_any_user(app, monkeypatch):
    """(Root may write to any file: the store's read-only answer is faked at the one place the screen asks.)"""
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        monkeypatch.setattr(type(screen.session), "read_only", lambda session: True)
        await pilot.press("n")
        assert app.screen is screen and "read-only for you: nothing can be written" in status(app)


async def test_n_on_the_scopes_screen_fills_in_the_scope_under_the_cursor(app):
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(ListTable)
        table.move_cursor(row=row_keys(table).index("pcmem-demo"))
        await pilot.press("n")
        assert isinstance(app.screen, RememberScreen)
        assert app.screen.query_one("#scope", Input).value == "pcmem-demo"


async def test_sort_cycles_both_ways_and_the_scopes_list_sorts_too(store_path):
    with pcmem.open(store_path, embedder=None) as runtime:  # the real clock: after the template's frozen one
        runtime.memory.for_scope("notes").remember(NewEntry(text="Notes change last."))
    app = make_app(store_path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(ListTable)
        assert row_keys(table) == ["notes", "pcmem-demo"]
        await pilot.press("s")  # the biggest first
        assert row_keys(table) == ["pcmem-demo", "notes"]
        await pilot.press("s")  # the latest change first
        assert row_keys(table) == ["notes", "pcmem-demo"] and "last change" in status(app)
        await pilot.press("less_than_sign", "less_than_sign")
        assert app.screen.sort == "name"
        screen = await open_scope(pilot)
        await pilot.press("less_than_sign")
        assert screen.sort == "id"
        await pilot.press("greater_than_sign")
        assert screen.sort == "created"


# --- the documented key table is the app's ---------------------------------------------------------------------------

SCREENS: dict[str, type] = {"scopes": ScopesScreen, "entries": EntriesScreen, "entry": EntryScreen,
                            "search": SearchScreen, "trace": TraceScreen, "lists": ListTable}


TUI_PAGE = "docs/getting-started/tui.md"


def documented_keys() -> dict[str, set[str]]:
    """The key table of the Terminal UI page: keys by the screens its "where" column names."""
    keys: dict[str, set[str]] = {}
    for line in section(TUI_PAGE, "## Keys").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[1].startswith("`"):
            continue
        for where in re.split(r",\s*", cells[0]):
            keys.setdefault(where, set()).update(re.findall(r"`([^`]+)`", cells[1]))
    return keys


def bound(where: type) -> set[str]:
    """Every key the screen (or list) binds, as the docs write keys."""
    names = {"question_mark": "?", "slash": "/", "colon": ":", "left_square_bracket": "[",
             "right_square_bracket": "]", "less_than_sign": "<", "greater_than_sign": ">", "escape": "esc"}
    bindings = Binding.make_bindings([*where.BINDINGS, *(StoreScreen.BINDINGS if issubclass(where, StoreScreen) else [])])
    return {names.get(binding.key, binding.key) for binding in bindings}


def test_the_documented_key_table_names_only_keys_the_app_binds_there_and_every_key_the_app_binds():
    table = documented_keys()
    assert set(table) <= set(SCREENS) | {"everywhere"}, set(table) - set(SCREENS)
    everywhere = {"?", "q", "ctrl+c", "ctrl+z", "esc"}
    for where, screen in SCREENS.items():
        documented, actual = table.get(where, set()), bound(screen)
        assert documented <= actual | everywhere, f"{where}: {TUI_PAGE} names keys the app does not bind: " \
                                                  f"{sorted(documented - actual)}"
        undocumented = actual - {"enter", "up", "down", "home", "end", "pageup", "pagedown", "f1"} - everywhere - documented
        assert not undocumented, f"{where}: keys the app binds that {TUI_PAGE}'s table does not name: {sorted(undocumented)}"
    assert {binding.key for binding in Binding.make_bindings(PcmemApp.BINDINGS)} - {"question_mark", "f1"} <= \
        {"q", "ctrl+c", "ctrl+z"} and everywhere <= table.get("everywhere", set())
