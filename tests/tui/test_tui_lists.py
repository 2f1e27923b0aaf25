"""``/`` filters and ``:`` jumps on every list of the TUI (issue #32): scopes, entries, search hits, the rerank trace,
the revision picker and an entry's history, all one widget. Real stores (the seeded template of
tests/tui/conftest.py), Textual's pilot.
"""

from __future__ import annotations

from tui_pilot import (
    SIZE,
    ScriptedReranker,
    open_entry,
    open_scope,
    open_store,
    row_keys,
    rows,
    search,
    settle,
    status,
    text_of,
)

import pcmem
from pcmem_tui.app import make_app
from pcmem_tui.prompt import ListPrompt
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.revisions import RevisionScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.screens.trace import TraceScreen
from pcmem_tui.table import ListTable


def prompt(app) -> ListPrompt:
    return app.screen.query_one(ListPrompt)


async def test_slash_filters_and_colon_jumps_on_the_scopes_list(app):
    """``/`` on the scopes list opened a search of the scope under the cursor; there was no filter or jump."""
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(ListTable)
        await pilot.press("slash", *"DEMO")  # case-insensitive, narrows as you type
        assert isinstance(app.screen, ScopesScreen) and row_keys(table) == ["pcmem-demo"]
        assert prompt(app).border_subtitle == "1 of 2"
        await pilot.press("enter")  # keeps the filter, on screen, and gives the keys back to the list
        assert table.has_focus and prompt(app).display and row_keys(table) == ["pcmem-demo"]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, EntriesScreen) and app.screen.scope == "pcmem-demo"
        await pilot.press("escape")
        await pilot.press("slash", "escape")  # esc in the filter clears it
        assert row_keys(table) == ["notes", "pcmem-demo"] and not prompt(app).display and table.has_focus
        await pilot.press("colon", "2", "enter")
        assert table.cursor_row == 1
        await pilot.press("colon", *"notes", "enter")  # the next row holding the text, wrapping round
        assert table.cursor_key == "notes"
        await pilot.press("colon", *"nowhere", "enter")
        assert table.cursor_key == "notes" and status(app) == "no row holds 'nowhere'"


async def test_on_the_entries_list_slash_filters_and_capital_s_searches(app):
    """``/`` searched from the entries list (``f`` filtered); now ``/`` filters like on every list, and the filter
    also finds an entry by any part of its id, which the list shows shortened."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        await pilot.press("slash", *"owner")
        assert isinstance(app.screen, EntriesScreen) and row_keys(table) == ["release-owner"]
        await pilot.press("enter", "colon", "1", "enter")
        assert table.cursor_key == "release-owner"
        await pilot.press("S")
        assert isinstance(app.screen, SearchScreen) and app.screen.scope == "pcmem-demo"


async def test_search_hits_filter_and_the_hit_box_follows_the_row_under_the_cursor(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        screen = app.screen
        await search(pilot, "Marco Priya")
        hits = screen.query_one("#hits", ListTable)
        assert hits.has_focus and hits.row_count == 5
        await pilot.press("slash", *"oolong")
        marco = next(hit for hit in screen.page.hits if "oolong" in hit.text)
        assert [row[4] for row in rows(hits)] == [marco.text]
        assert marco.citation.entry_version_id in text_of(app, "#hit-detail")  # not the first hit's
        await pilot.press("enter", "S")  # keep the filter; S goes back to the query (it searches on every screen)
        assert screen.query_one("#query").has_focus
        await pilot.press("tab", "tab", "tab", "tab")  # query → mode → limit → rerank → the hits
        assert hits.has_focus
        await pilot.press("enter")  # open the one hit left
        await settle(pilot)
        assert app.screen.entry_id == marco.citation.entry_id


async def test_colon_jumps_in_the_trace_and_slash_filters_its_verdicts(store_path):
    with open_store(store_path, reranker=ScriptedReranker(ranks=(3, 1))) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot)
            await pilot.press("S")
            await search(pilot, "Marco Priya", limit="3")
            await pilot.press("t")
            assert isinstance(app.screen, TraceScreen)
            trace = app.screen.query_one(ListTable)
            await pilot.press("colon", "3", "enter")
            assert trace.cursor_row == 2
            await pilot.press("slash", *"kept")
            assert [row[2] for row in rows(trace)] == ["✓ kept", "✓ kept"]


async def test_the_revision_picker_filters_and_picks_the_row_left(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, RevisionScreen)
        picker = app.screen.query_one(ListTable)
        assert row_keys(picker) == ["3", "2", "1"] and picker.cursor_key == "3"  # newest first, on the one shown
        await pilot.press("slash", *"revise", "enter", "enter")
        await settle(pilot)
        assert app.screen is screen and screen.manifest.revision == 2


async def test_an_entrys_history_filters_jumps_and_keeps_enter_and_m_on_the_row_left(runtime):
    """The entry's history was Textual's DataTable, the one list without ``/`` and ``:``; its rows are found by the
    history event they show, so enter, ``m`` and the change panel act on the row left by a filter, not on the
    row at the same position in the unfiltered history."""
    notes = runtime.memory.for_scope("notes")
    for version, text in enumerate(("Buy sencha tea for Marco.", "Buy sencha tea for Priya."), 1):
        notes.revise(pcmem.ReviseRequest(entry_id="n1", text=text, expected_version=version))
    app = make_app(runtime)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "n1")
        history = screen.query_one("#history", ListTable)
        assert history.has_focus and [row[0] for row in rows(history)] == ["r1", "r2", "r3"]
        assert history.cursor_key == "2"  # the version shown: the head
        await pilot.press("colon", "1", "enter")
        assert history.cursor_row == 0 and text_of(app, "#diff").startswith("r1 remember")
        await pilot.press("slash", *"sencha marco", "enter")  # the revise to v2 is the only row left
        assert [row[:4] for row in rows(history)] == [["r2", "revise", "active", "v2"]]
        assert text_of(app, "#diff").startswith("r2 revise: v1 → v2")
        await pilot.press("m")
        assert screen.marked == 1 and rows(history)[0][0] == "●r2"
        await pilot.press("enter")  # opens r2's version, not the first row of the history (r1)
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and app.screen.detail is not None
        assert app.screen.detail.entry.citation.revision == 2
        assert app.screen.detail.entry.entry.text == "Buy sencha tea for Marco."


async def test_an_outside_write_moves_the_rows_it_changed_instead_of_sorting_and_filtering_the_whole_scope(
        runtime, monkeypatch):
    """``j`` while an agent writes: each write's reload sorted the whole scope again (a Python sort key per entry,
    a casefold per text) and made every row's filter words again; at 10,000 entries that held the event loop over
    100 ms per write under load, and a key pressed meanwhile waited. Now only the rows a write changed move."""
    import pcmem_tui.screens.entries as entries_module

    bulk = runtime.memory.for_scope("bulk")
    bulk.remember(pcmem.RememberRequest(entries=tuple(
        pcmem.NewEntry(entry_id=f"b{i:03}", text=f"Bulk note {i} about the staging cluster.") for i in range(300))))
    keys_made, words_made = [], []

    def counted(made: list[int], make):  # noqa: ANN001, ANN202
        return lambda *args: (made.append(1), make(*args))[1]

    monkeypatch.setattr(entries_module, "SORTS", {name: counted(keys_made, key)
                                                  for name, key in entries_module.SORTS.items()})
    monkeypatch.setattr(entries_module, "_words", counted(words_made, entries_module._words))
    app = make_app(runtime)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "bulk")
        table = screen.query_one(ListTable)
        await pilot.press("s", "s", "a")  # by text (the costliest key), retired entries hidden
        await pilot.press("slash", *"note", "enter")  # and a filter kept on
        await settle(pilot)
        assert screen.sort == "text" and not screen.include_retired and table.row_count == 300
        table.move_to_key("b200")
        keys_made.clear()
        words_made.clear()
        bulk.revise(pcmem.ReviseRequest(entry_id="b150", text="Another note, first by text.", expected_version=1))
        bulk.remember("A new note from the agent.")
        bulk.retire(pcmem.RetireRequest(entry_id="b010", expected_version=1))
        screen.refresh_from_store()  # what the watch does after an outside write
        await settle(pilot)
        assert len(keys_made) <= 2 and len(words_made) <= 2, (len(keys_made), len(words_made))
        active = [e.entry for e in bulk.list(pcmem.ListRequest(state="active")).entries]
        assert row_keys(table) == [e.entry_id for e in sorted(active, key=lambda e: (e.text.casefold(), e.entry_id))]
        assert row_keys(table)[:2][1] == "b150" and "b010" not in row_keys(table) and table.cursor_key == "b200"


async def test_a_scope_read_whole_is_kept_out_of_full_collections_until_the_app_exits(app, monkeypatch):
    """With a 10,000-entry scope on screen every full garbage collection walked ~160,000 objects (300 ms at load
    10) and came every few seconds while an agent wrote: the event loop stopped for it, ``j`` with it."""
    import gc

    from pcmem_tui import garbage

    monkeypatch.setattr(garbage, "FREEZE_FROM", 10)  # the demo scope's 18 entries count as big here
    gc.unfreeze()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot)
            await settle(pilot)
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() == 0  # the app hands it all back when it exits
    finally:
        gc.unfreeze()
