"""What a lazygit/k9s user looks for in the TUI (issue #32): the embedder loading in the background, forget with a
confirmation, search across scopes with filters, comparing any two versions, the Remember dialog's id, metadata and
upsert, scrolling the entry text, ``$EDITOR``, search history.

Real stores (the seeded template of tests/tui/conftest.py), Textual's pilot; no timings.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from textual.widgets import Checkbox, Input, TextArea
from tui_pilot import (
    SIZE,
    FrozenClock,
    open_entry,
    open_scope,
    row_keys,
    rows,
    search,
    settle,
    status,
    text_of,
)

import pcmem
from pcmem import NewEntry
from pcmem.store.duckdb import files
from pcmem.store.duckdb.wal import damaged_wal_copies
from pcmem.testing import HashEmbedder
from pcmem_tui.app import make_app
from pcmem_tui.history import MAX_QUERIES, SearchHistory, history_file
from pcmem_tui.screens.dialogs import RememberScreen, ReviseScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.forget import ForgetEntryScreen, ForgetScopeScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.table import ListTable
from pcmem_tui.widgets import StoreBar


class GatedEmbedder(HashEmbedder):
    """A model that takes as long as the test says: ``embed_query`` waits for ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.queries: list[str] = []

    def embed_query(self, text: str):  # noqa: ANN201 - the port's signature
        self.gate.wait(30)
        self.queries.append(text)
        return super().embed_query(text)


async def until(pilot, condition) -> None:  # noqa: ANN001 - a pilot and a predicate
    """Wait for ``condition`` while a background thread works (bounded: a missing behaviour fails, never hangs)."""
    for _ in range(600):
        if condition():
            return
        await pilot.pause(0.05)
    assert condition()


def scopes_shown(app) -> bool:  # noqa: ANN001
    return isinstance(app.screen, ScopesScreen) and app.screen.query_one("#scopes", ListTable).row_count > 0


def bar(app) -> str:  # noqa: ANN001
    return str(app.screen.query_one(StoreBar).render())


# --- 1. the embedder loads in the background at start-up -----------------------------------------------------------


async def test_the_embedder_loads_in_the_background_at_start_up_and_the_status_bar_says_so(tmp_path):
    embedder = GatedEmbedder()
    with pcmem.open(tmp_path / "m.duckdb", embedder=embedder, clock=FrozenClock()) as runtime:
        runtime.memory.for_scope("notes").remember("Buy oolong tea for Marco.")
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            try:
                await until(pilot, lambda: scopes_shown(app))
                assert f"loading {embedder.profile.describe()}…" in bar(app)  # browsing works meanwhile
            finally:
                embedder.gate.set()
            await until(pilot, lambda: embedder.queries == ["warm up"])  # loaded before any search asked for it
            await settle(pilot)
            assert "loading" not in bar(app)



async def test_a_search_started_while_the_embedder_loads_says_it_waits_for_it(tmp_path):
    embedder = GatedEmbedder()
    with pcmem.open(tmp_path / "m.duckdb", embedder=embedder, clock=FrozenClock()) as runtime:
        runtime.memory.for_scope("notes").remember("Buy oolong tea for Marco.")
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            try:
                await until(pilot, lambda: scopes_shown(app))
                await pilot.press("S")
                app.screen.query_one("#query", Input).value = "oolong tea"
                app.screen.query_one("#query", Input).focus()
                await pilot.press("enter")
                stage = app.screen.query_one("#progress-stage")
                await until(pilot, lambda: str(stage.render()).startswith("waiting for the embedding model…"))
            finally:
                embedder.gate.set()
            await settle(pilot)
            assert [hit.citation.entry_id for hit in app.screen.page.hits] == [
                runtime.memory.for_scope("notes").list().entries[0].entry.entry_id]

class BrokenEmbedder(HashEmbedder):
    def embed_query(self, text: str):  # noqa: ANN201
        raise pcmem.EmbeddingError("cannot load the embedding model from /nowhere")


async def test_an_embedder_that_cannot_load_is_said_once_in_the_status_bar(tmp_path):
    with pcmem.open(tmp_path / "m.duckdb", embedder=BrokenEmbedder(), clock=FrozenClock()) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=(160, 30)) as pilot:
            await until(pilot, lambda: "⚠ embedder not loaded (cannot load the embedding model from /nowhere)"
                        in bar(app))


# --- 2. forget, with a confirmation that shows what will be erased ---------------------------------------------------


async def test_forget_an_entry_shows_its_text_asks_and_erases_it(app, runtime):
    notes = runtime.memory.for_scope("notes")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        await pilot.press("x")
        assert isinstance(app.screen, ForgetEntryScreen)
        question = text_of(app, ".dialog-question")
        assert "Forget this entry of 'notes'?" in question and "“Buy oolong tea for Marco.”" in question
        assert "its only version" in question and "cannot be undone" in question
        await pilot.press("n")
        await settle(pilot)
        assert app.screen is screen and notes.get_entry("n1").entry.text == "Buy oolong tea for Marco."
        await pilot.press("x", "y")
        await settle(pilot)
        assert app.screen is screen and row_keys(screen.query_one(ListTable)) == ["n2"]
        assert status(app) == "forgot 'n1' → revision 2"
        with pytest.raises(pcmem.EntryErasedError):
            notes.get_entry("n1")


async def test_forget_from_the_entry_screen_counts_every_version_and_goes_back_to_the_list(app, runtime):
    """A past version's screen can forget too (forget erases every version): back past both entry screens."""
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await open_entry(pilot, "release-day")
        await pilot.press("k", "enter")  # from its first version: the screens of both versions close
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and app.screen.revision == 1
        await pilot.press("x")
        assert "all 2 versions it ever had" in text_of(app, ".dialog-question")
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, EntriesScreen) and "release-day" not in row_keys(app.screen.query_one(ListTable))
        assert status(app).startswith("forgot 'release-day' → revision 4")
        with pytest.raises(pcmem.EntryErasedError):
            runtime.memory.for_scope("pcmem-demo").get_entry("release-day")


async def test_forget_from_a_past_revisions_list_does_not_guess_the_version_count(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        table = screen.query_one(ListTable)
        table.move_cursor(row=row_keys(table).index("release-day"))
        await pilot.press("x")  # release-day is v1 in r1, v2 at the head: both go
        assert "every version it ever had" in text_of(app, ".dialog-question")
        await pilot.press("n")


async def test_forget_a_scope_shows_its_counts_and_needs_its_name_typed(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(ListTable)
        table.move_cursor(row=row_keys(table).index("pcmem-demo"))
        await pilot.press("x")
        assert isinstance(app.screen, ForgetScopeScreen)
        question = text_of(app, ".dialog-question")
        assert "Forget every entry of 'pcmem-demo'?" in question
        assert "17 active entries and 1 retired entry (revision 3)" in question
        await pilot.press(*"notes", "enter")  # the wrong name writes nothing
        assert isinstance(app.screen, ForgetScopeScreen) and "type 'pcmem-demo' exactly" in text_of(app, "#dialog-error")
        app.screen.query_one(Input).value = "pcmem-demo"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ScopesScreen) and status(app) == "forgot 18 entries in 'pcmem-demo' → revision 4"
        assert rows(app.screen.query_one(ListTable))[row_keys(table).index("pcmem-demo")][1:3] == ["0", "0"]
        assert runtime.memory.for_scope("notes").head().revision == 1  # the other scope is untouched


# --- 3. search across scopes and with filters ------------------------------------------------------------------------


async def fill_filters(pilot, **fields: str) -> None:  # noqa: ANN001
    await pilot.press("ctrl+f")
    for name, value in fields.items():
        pilot.app.screen.query_one(f"#{name}", Input).value = value


async def test_search_every_scope_shows_each_hits_scope_and_opens_it_there(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await fill_filters(pilot, scopes="*")
        await search(pilot, "Marco")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert {hit.citation.entry_id for hit in screen.page.hits} == {"n1", "marco-tea", "onboarding", "offsite"}
        assert status(app) == "4 hits · mode fts · 'notes' r1 + 'pcmem-demo' r3"
        table = screen.query_one("#hits", ListTable)
        assert [label for label, _ in table.columns][-2:] == ["scope", "text"]
        row = [hit.citation.entry_id for hit in screen.page.hits].index("n1")
        assert rows(table)[row][-2] == "notes"
        table.move_cursor(row=row)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and (app.screen.scope, app.screen.entry_id) == ("notes", "n1")


async def test_search_filters_by_kind_metadata_and_date_and_keeps_them_shown_for_the_next_search(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await fill_filters(pilot, kinds="event, preference")
        await search(pilot, "Marco")
        assert {hit.citation.entry_id for hit in app.screen.page.hits} == {"marco-tea", "offsite"}
        app.screen.query_one("#where", Input).value = "source=chat"
        await search(pilot, "Marco")
        assert [hit.citation.entry_id for hit in app.screen.page.hits] == ["marco-tea"]
        app.screen.query_one("#created-before", Input).value = "2026-01-01"  # the store was written after that
        await search(pilot, "Marco")
        assert app.screen.page.hits == () and status(app).startswith("0 hits")
        await pilot.press("escape", "escape")
        await pilot.press("S")  # a new visit starts from the filters used last, shown (never a hidden filter)
        assert app.screen.query_one("#search-filters").display
        assert app.screen.query_one("#kinds", Input).value == "event, preference"
        assert app.screen.query_one("#scopes", Input).value == ""  # the scope the search was opened on


@pytest.mark.parametrize(("field", "value", "message"), [
    ("where", "=chat", "metadata filter takes KEY=JSON pairs"),
    ("where", "'source=chat", "metadata filter: No closing quotation"),
    ("created-from", "last week", "created_from:"),
    ("kinds", " , ", None),  # blank names are dropped: every kind
    ("scopes", "notes, missing-scope", None),  # a scope with no memory contributes nothing
])
async def test_bad_search_filters_say_why_in_one_line(app, field, value, message):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await fill_filters(pilot, **{field: value})
        await search(pilot, "Marco")
        if message is None:
            assert app.screen.page is not None and app.screen.page.hits
        else:
            assert app.screen.page is None and status(app).startswith(f"✗ {message}") and "\n" not in status(app)


def test_filter_fields_parse_like_the_cli_where():
    from pcmem_tui import filters

    assert filters.where('user=ana turn=3 ok=true "city=New York" n=\'"3"\'') == {
        "user": "ana", "turn": 3, "ok": True, "city": "New York", "n": "3"}
    assert filters.where("  ") is None and filters.kinds("") is None
    assert filters.scope_names(" a, b ,a", "x", list) == ("a", "b")
    assert filters.scope_names("", "x", list) == ("x",)
    assert filters.scope_names("*", "x", lambda: ["p", "q"]) == ("p", "q")
    with pytest.raises(pcmem.InputError, match="no scopes yet"):
        filters.scope_names("*", "x", list)


# --- 8. search history -----------------------------------------------------------------------------------------------


async def test_up_and_down_in_the_query_recall_earlier_searches_and_keep_what_was_typed(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await search(pilot, "release thursdays")
        await search(pilot, "Marco Priya")
        await search(pilot, "release thursdays")  # searched again: the newest, once
        await pilot.press("escape", "escape")
        await pilot.press("S")  # a new visit shares the history
        query = app.screen.query_one("#query", Input)
        await pilot.press(*"half typ")
        recalled = []
        for key in ("up", "up", "up", "down", "down", "down"):
            await pilot.press(key)
            recalled.append(query.value)
        assert recalled == ["release thursdays", "Marco Priya", "Marco Priya", "release thursdays", "half typ",
                            "half typ"]
        assert query.cursor_position == len("half typ")


async def recall(pilot, presses: int) -> list[str]:  # noqa: ANN001
    """What ``↑`` pressed ``presses`` times shows in a new search screen's query field, press by press."""
    await open_scope(pilot)
    await pilot.press("S")
    query = pilot.app.screen.query_one("#query", Input)
    shown = []
    for _ in range(presses):
        await pilot.press("up")
        shown.append(query.value)
    return shown


async def test_search_history_lasts_across_sessions_in_the_users_state_folder(store_path, _state_folder, tmp_path):
    """The history lasted one session. It is kept per store file in the user's state folder, not in the store."""
    app = make_app(store_path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await search(pilot, "release thursdays")
        await search(pilot, "Marco Priya")
    kept = list((_state_folder / "pcmem" / "search-history").iterdir())
    assert [file.name.startswith("memory-") and file.suffix == ".json" for file in kept] == [True]

    again = make_app(store_path, embedder=None)  # a new session on the same store
    async with again.run_test(size=SIZE) as pilot:
        assert await recall(pilot, 3) == ["Marco Priya", "release thursdays", "release thursdays"]

    other = tmp_path / "other" / "memory.duckdb"  # the same name in another folder: another store, its own history
    other.parent.mkdir()
    other.write_bytes(store_path.read_bytes())
    elsewhere = make_app(other, embedder=None)
    async with elsewhere.run_test(size=SIZE) as pilot:
        assert await recall(pilot, 1) == [""]


async def test_a_damaged_history_file_counts_as_empty_and_the_next_search_replaces_it(store_path):
    file = history_file(store_path)
    file.parent.mkdir(parents=True)
    file.write_bytes(b"\xff{ not json")
    app = make_app(store_path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        assert await recall(pilot, 1) == [""]
        await search(pilot, "Porto venue")
    assert json.loads(file.read_text(encoding="utf-8")) == {"queries": ["Porto venue"]}


def test_the_history_file_is_bounded_and_merges_what_other_sessions_searched(tmp_path):
    file = tmp_path / "history.json"
    first, second = SearchHistory(file), SearchHistory(file)  # two TUIs on one store
    for number in range(MAX_QUERIES + 5):
        first.add(f"query {number}")
    assert SearchHistory(file).queries == [f"query {n}" for n in range(5, MAX_QUERIES + 5)]
    second.add("from the other session")
    assert second.queries[-2:] == [f"query {MAX_QUERIES + 4}", "from the other session"]
    assert SearchHistory(file).queries == second.queries and len(second.queries) == MAX_QUERIES
    file.write_text('{"queries": ["kept", 7, null, "  "]}', encoding="utf-8")  # wrong types are left out
    assert SearchHistory(file).queries == ["kept"]


def test_a_history_that_cannot_be_written_lasts_the_session_and_says_so_once(tmp_path):
    (tmp_path / "in-the-way").write_text("a file where the folder would be", encoding="utf-8")
    history = SearchHistory(tmp_path / "in-the-way" / "history.json")
    history.add("first")
    problem = history.unsaid_problem()
    assert problem is not None and problem.startswith("search history kept for this session only: cannot write")
    history.add("second")
    assert history.unsaid_problem() is None and history.queries == ["first", "second"]


# --- 4. compare any two versions --------------------------------------------------------------------------------------


async def test_m_marks_a_version_and_the_cursor_compares_it_with_any_other(runtime):
    notes = runtime.memory.for_scope("notes")
    for version, text in enumerate(("Buy sencha tea for Marco.", "Buy sencha tea for Marco and Priya."), 1):
        notes.revise(pcmem.ReviseRequest(entry_id="n1", text=text, expected_version=version))
    notes.retire(pcmem.RetireRequest(entry_id="n1", expected_version=3))
    app = make_app(runtime)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "n1")
        diff = screen.query_one("#diff-box")
        await pilot.press("g", "m")  # mark the first version, then walk to the last event
        assert rows(screen.query_one("#history", ListTable))[0][0] == "●r1"
        await pilot.press("G")
        shown = text_of(app, "#diff")
        assert shown.startswith("r1 v1 active → r4 v3 retired:")
        assert "Buy [-oolong-]{+sencha+} tea for Marco{+ and Priya+}." in shown
        assert diff.border_title == "compare ● r1 with r4 (m: unmark)"
        await pilot.press("k")  # r3 is v3 too: the text is the same, only a state change later
        assert "Buy [-oolong-]{+sencha+} tea for Marco{+ and Priya+}." in text_of(app, "#diff")
        await pilot.press("m")  # marking another row moves the mark
        await pilot.press("j")
        assert text_of(app, "#diff") == "r3 v3 active → r4 v3 retired: the same version (v3); text unchanged"
        await pilot.press("k", "m")  # on the marked row: unmark, back to what each event changed
        assert diff.border_title == "change" and rows(screen.query_one("#history", ListTable))[2][0] == "r3"
        assert text_of(app, "#diff").startswith("r3 revise: v2 → v3")


# --- 5. id, metadata and upsert in the Remember dialog ---------------------------------------------------------------


async def remember_in_dialog(pilot, text: str, **fields: object) -> None:  # noqa: ANN001
    dialog = pilot.app.screen
    assert isinstance(dialog, RememberScreen)
    for name, value in fields.items():
        if name == "upsert":
            dialog.query_one(Checkbox).value = bool(value)
        else:
            dialog.query_one(f"#{name}", Input).value = str(value)
    dialog.query_one(TextArea).text = text
    await pilot.press("ctrl+s")
    await settle(pilot)


async def test_remember_with_an_id_metadata_and_upsert_by_that_key(app, runtime):
    notes = runtime.memory.for_scope("notes")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        await pilot.press("n")
        await remember_in_dialog(pilot, "Ana lives in Lisbon.", id="city", metadata='{"source": "chat", "turn": 3}')
        assert app.screen is screen and status(app) == "remembered 1 entry → revision 2"
        written = notes.get_entry("city")
        assert written.entry.text == "Ana lives in Lisbon." and written.entry.metadata == {"source": "chat", "turn": 3}
        await pilot.press("n")
        await remember_in_dialog(pilot, "Ana lives in Porto.", id="city")  # the key exists: without upsert, refused
        assert isinstance(app.screen, RememberScreen) and "city" in text_of(app, "#dialog-error")
        await remember_in_dialog(pilot, "Ana lives in Porto.", upsert=True)
        assert app.screen is screen and status(app) == "upserted 'city' → revision 3"
        assert notes.get_entry("city").entry.text == "Ana lives in Porto." and notes.get_entry("city").entry.version == 2
        await pilot.press("n")
        await remember_in_dialog(pilot, "Ana lives in Porto.", id="city", upsert=True)
        assert status(app) == "'city' unchanged (it already holds exactly this) → revision 3"


@pytest.mark.parametrize(("fields", "message"), [
    ({"metadata": "[1, 2]"}, "✗ metadata must be a JSON object, e.g. {\"source\": \"chat\"}, not list"),
    ({"metadata": "{source: chat}"}, "✗ metadata must be a JSON object"),
    ({"upsert": True}, "✗ upsert needs an id"),
    ({"id": "bad id\t"}, "✗ "),
])
async def test_remember_dialog_refuses_bad_ids_and_metadata_in_one_line(app, runtime, fields, message):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("n")
        await remember_in_dialog(pilot, "Some text.", **fields)
        assert isinstance(app.screen, RememberScreen) and text_of(app, "#dialog-error").startswith(message)
        assert runtime.memory.for_scope("notes").head().revision == 1


async def test_a_kept_remember_draft_keeps_its_id_metadata_and_upsert(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("n")
        dialog = app.screen
        dialog.query_one("#id", Input).value = "city"
        dialog.query_one("#metadata", Input).value = '{"source": "chat"}'
        dialog.query_one(Checkbox).value = True
        await pilot.press("escape", "k")
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, RememberScreen)
        assert (dialog.query_one("#id", Input).value, dialog.query_one("#metadata", Input).value,
                dialog.query_one(Checkbox).value) == ("city", '{"source": "chat"}', True)


# --- 6. j/k scroll the entry text; the entries' text column at 80 columns --------------------------------------------


async def test_j_and_k_scroll_the_focused_entry_text_like_less(runtime):
    runtime.memory.for_scope("notes").remember(NewEntry(entry_id="long", text="\n".join(f"line {i}" for i in range(40))))
    app = make_app(runtime)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "long")
        await pilot.press("t")
        box = screen.query_one("#entry-text-box")
        assert box.has_focus and box.max_scroll_y > 2
        await pilot.press("j", "j", "j", "k")
        await settle(pilot)
        assert box.scroll_target_y == 2
        await pilot.press("G")
        assert box.scroll_target_y == box.max_scroll_y
        await pilot.press("g")
        assert box.scroll_target_y == 0
        await pilot.press("tab", "k")  # the history table keeps its own j/k
        assert screen.query_one("#history", ListTable).has_focus and box.scroll_target_y == 0


@pytest.mark.parametrize(("width", "text", "retired_state"), [(80, 48, "○"), (100, 60, "retired")])
async def test_at_80_columns_the_entry_text_gets_most_of_the_row(app, width, text, retired_state):
    async with app.run_test(size=(width, 24)) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        assert table.widths[0] == text  # 40 of 80 with the wide columns: half (18 rows fit: no scrollbar)
        shown = rows(table)[row_keys(table).index("sync-later")]
        assert shown[3] == retired_state and shown[0].startswith("Cloud sync is postponed")
        assert rows(table)[row_keys(table).index("release-day")][3] in ("●", "active")


async def test_the_entries_columns_follow_a_resize_of_the_terminal(app):
    """The narrow columns are the list's column specs: a resize across 100 cells swaps them, rows and cursor stay."""
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        table.move_cursor(row=row_keys(table).index("sync-later"))
        assert [label for label, _ in table.columns] == ["text", "kind", "ver", "st", "id"]
        await pilot.resize_terminal(120, 24)
        await settle(pilot)
        assert [label for label, _ in table.columns] == ["text", "kind", "ver", "state", "id"]
        assert table.cursor_key == "sync-later" and rows(table)[table.cursor_row][3] == "retired"
        assert "retired" in table.render_line(table.cursor_row - round(table.scroll_y) + 1).text
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert table.widths[0] == 48 and rows(table)[table.cursor_row][3] == "○"


# --- 7. $EDITOR --------------------------------------------------------------------------------------------------------

EDITOR_SCRIPT = """
import os, sys
path = sys.argv[-1]
writable = bool(os.stat(path).st_mode & 0o200)  # the mode, not os.access: root may write anything
with open(os.environ["EDITOR_LOG"], "a") as log:
    log.write(("writable" if writable else "read-only") + "\\n")
if writable:
    text = open(path, encoding="utf-8").read()
    open(path, "w", encoding="utf-8").write(text.replace("oolong", "sencha"))
sys.exit(int(os.environ.get("EDITOR_STATUS", "0")))
"""


@pytest.fixture
def editor(tmp_path, monkeypatch):
    """The editor is a small script: it swaps a word when the file is writable and logs whether it was. The pilot's
    headless terminal cannot be handed over (App.suspend), which is not what these tests are about."""
    script = tmp_path / "editor.py"
    script.write_text(EDITOR_SCRIPT)
    log = tmp_path / "editor.log"
    monkeypatch.setenv("EDITOR_LOG", str(log))
    monkeypatch.setattr("textual.app.App.suspend", lambda self: contextlib.nullcontext())
    return f"{sys.executable} -I {script}", log


async def test_o_opens_the_text_in_the_editor_and_a_change_becomes_a_revise_with_compare_and_swap(runtime, editor):
    command, log = editor
    notes = runtime.memory.for_scope("notes")
    app = make_app(runtime, editor=command)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await open_entry(pilot, "n1")
        await pilot.press("o")
        assert isinstance(app.screen, ReviseScreen) and log.read_text() == "writable\n"
        assert app.screen.query_one(TextArea).text == "Buy sencha tea for Marco."
        notes.revise(pcmem.ReviseRequest(entry_id="n1", text="Buy green tea for Marco.", expected_version=1))
        await pilot.press("ctrl+s")  # somebody revised it meanwhile: the dialog shows how, the edit stays
        await settle(pilot)
        assert isinstance(app.screen, ReviseScreen) and "changed since you opened it" in text_of(app, "#dialog-error")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and notes.get_entry("n1").entry.text == "Buy sencha tea for Marco."


async def test_a_past_version_opens_read_only_in_the_editor(runtime, editor):
    command, log = editor
    app = make_app(runtime, editor=command)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await open_entry(pilot, "release-day")
        await pilot.press("k", "enter")
        await settle(pilot)
        await pilot.press("o")
        assert log.read_text() == "read-only\n"
        assert isinstance(app.screen, EntryScreen) and status(app) == "closed the editor: the text is unchanged"


@pytest.mark.parametrize(("command", "environment", "message"), [
    (None, {}, "✗ set $EDITOR (or $VISUAL)"),
    ("script", {"EDITOR_STATUS": "3"}, "✗ "),  # the command line, then: exited with status 3
    ("/no/such/editor", {}, "✗ cannot start the editor '/no/such/editor': no such program"),
    ("vim 'unclosed", {}, "✗ the editor is not a command line"),
])
async def test_editor_problems_are_said_in_one_line_and_change_nothing(runtime, editor, monkeypatch, command,
                                                                       environment, message):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    app = make_app(runtime, editor=editor[0] if command == "script" else command)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await open_entry(pilot, "n1")
        await pilot.press("o")
        assert isinstance(app.screen, EntryScreen) and status(app).startswith(message)
        if "EDITOR_STATUS" in environment:
            assert status(app).endswith("exited with status 3: nothing was taken from it")
        assert runtime.memory.for_scope("notes").head().revision == 1


@pytest.mark.parametrize(("environment", "expected"), [
    ({"VISUAL": "code --wait", "EDITOR": "vim"}, "code --wait"),  # as git: VISUAL first
    ({"EDITOR": "vim"}, "vim"),
    ({"VISUAL": " ", "EDITOR": ""}, None),
])
def test_pcmem_tui_gives_the_app_visual_else_editor(monkeypatch, environment, expected):
    from pcmem import settings

    for name in ("VISUAL", "EDITOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert settings.editor() == expected


# --- 9. the embedding rerank's trace shows the cosines ----------------------------------------------------------------


async def test_the_embedding_rerank_trace_shows_each_candidates_cosine(tmp_path):
    with pcmem.open(tmp_path / "m.duckdb", embedder=HashEmbedder(), clock=FrozenClock()) as runtime:
        runtime.memory.for_scope("notes").remember(pcmem.RememberRequest(entries=tuple(pcmem.NewEntry(text=text) for text in (
            "Marco drinks oolong tea.", "Marco books the Porto venue.", "Priya drinks coffee with Marco."))))
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot, "notes")
            await pilot.press("S")
            await search(pilot, "Marco tea", mode="hybrid", limit="2", policy="embedding")
            trace = app.screen.page.rerank
            assert trace is not None and len(trace.cosines) == len(trace.candidates) == 3
            await pilot.press("t")
            shown = {row_keys_row: row for row_keys_row, row in zip(row_keys(app.screen.query_one(ListTable)),
                                                                    rows(app.screen.query_one(ListTable)))}
            assert {rank: row[3] for rank, row in shown.items()} == {
                str(rank): f"cos {cosine:.3f}" for rank, cosine in enumerate(trace.cosines, 1)}


# --- pcmem's own warnings are shown, not swallowed by the terminal the app owns ------------------------------------


async def test_a_log_set_aside_while_the_tui_opens_the_store_is_said_on_screen(tmp_path):
    """A kill inside a commit leaves a log cut short; the open copies it aside and warns through :mod:`logging`. The
    CLI prints that on stderr — inside the TUI the line was lost, and the user never learnt a copy was kept."""
    path = tmp_path / "m.duckdb"
    pcmem.open(path, embedder=None).close()
    writer = ("import os, sys, pcmem\n"
              "memory = pcmem.open(sys.argv[1], embedder=None).memory.for_scope('notes')\n"
              "for i in range(3):\n    memory.remember(f'note {i} ' + 'x' * 200)\n"
              "os.kill(os.getpid(), 9)\n")
    done = subprocess.run([sys.executable, "-c", writer, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    wal = files.wal_path(path)
    wal.write_bytes(wal.read_bytes()[:-7])  # the last transaction cut short, as a kill inside its commit leaves it
    assert os.path.getsize(wal) > 0
    app = make_app(path, embedder=None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: scopes_shown(app))
        copy = damaged_wal_copies(path)
        assert len(copy) == 1
        notices = [n.message for n in app._notifications]
        assert any("never committed" in message and str(copy[0]) in message for message in notices), notices
