# ruff: noqa: F811 - the fixtures of test_tui are imported, and tests take them by name
"""The TUI beside agents that write all day (issue #45): an open entry stays editable while other entries change,
typed text survives a restart and an upsert, the owner named is a live one, ctrl+z hands the store on, and what
another process just changed is shown.

Real stores (the seeded template of ``test_tui``), real writer processes, Textual's pilot; no timings.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys

from test_tui import (  # noqa: F401 - fixtures used by name
    SIZE,
    _no_model_from_the_environment,
    _status_bar_clock,
    app,
    open_entry,
    open_scope,
    open_store,
    row_keys,
    runtime,
    seeded_template,
    settle,
    status,
    store_path,
    text_of,
)
from textual.widgets import Checkbox, Input, TextArea

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem_tui.app import make_app
from pcmem_tui.drafts import drafts_file
from pcmem_tui.screens.dialogs import ConfirmScreen, KeepDraftScreen, RememberScreen, ReviseScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.scopes import ScopesScreen

WRITE = """
import sys, pcmem
with pcmem.open_sync(sys.argv[1], embedder=None, shared=True) as runtime:
    runtime.memory.for_scope(sys.argv[2]).remember(sys.argv[3])
"""


def outside_write(path, scope: str, text: str) -> None:  # noqa: ANN001
    """``pcmem remember`` from another process (a client of the TUI, which owns the store)."""
    subprocess.run([sys.executable, "-c", WRITE, str(path), scope, text], check=True, timeout=120)


# --- 1. an open entry stays editable beside writers -------------------------------------------------------------------


async def test_an_open_entry_stays_editable_while_another_process_writes_to_its_scope(store_path):
    """The entry screen is pinned to the revision it was opened at: a write to another entry of the scope turned it
    "◷ past · read-only" and e answered "a past version". It is still the entry's head: e revises it."""
    app = make_app(store_path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "n1")
        outside_write(store_path, "notes", "An agent's unrelated note.")
        app.watch_store()
        await settle(pilot)
        assert screen.detail is not None and screen.detail.history.memory.revision == 2  # read again: r2 exists
        assert "past" not in text_of(app, "#entry-head") and "changed" not in text_of(app, "#entry-head")
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, ReviseScreen)
        app.screen.query_one(TextArea).text = "Buy oolong and sencha tea for Marco."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen and status(app).startswith("revised 'n1'")
    with open_store(store_path) as runtime:
        assert runtime.memory.for_scope("notes").get_entry("n1").entry.text == "Buy oolong and sencha tea for Marco."


async def test_an_entry_another_process_changed_says_so_and_h_shows_the_new_version(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "n1")
        runtime.memory.for_scope("notes").revise(pcmem.ReviseRequest(entry_id="n1", text="Buy green tea.",
                                                                     expected_version=1, reason="agent"))
        screen.refresh_from_store()
        await settle(pilot)
        assert "⚠ changed since you opened it: r2 revise (h: show it)" in text_of(app, "#entry-head")
        await pilot.press("e")
        assert app.screen is screen and "the entry changed since you opened it (r2 revise)" in status(app)
        await pilot.press("h")
        await settle(pilot)
        assert "Buy green tea." in text_of(app, "#entry-text") and "changed" not in text_of(app, "#entry-head")
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, ReviseScreen)


async def test_enter_on_the_shown_versions_history_row_opens_no_past_duplicate(app, runtime):
    runtime.memory.for_scope("notes").remember("Another note moves the scope on.")
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "n1")  # its version is from r1, the screen reads it as of r2
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and status(app) == "r1 is the version shown here"


# --- 2. typed text survives ---------------------------------------------------------------------------------------------


async def test_a_kept_draft_survives_a_restart_in_a_private_file_and_quitting_says_where_it_is(store_path, _state_folder):
    app = make_app(store_path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("n")
        app.screen.query_one(TextArea).text = "Half of a thought about Porto"
        app.screen.query_one("#reason", Input).value = "from the call"
        await pilot.press("escape")
        assert isinstance(app.screen, KeepDraftScreen)
        await pilot.press("k", "q")
        assert isinstance(app.screen, ScopesScreen)
        await pilot.press("q")  # a kept draft: the first q says where it stays
        assert app.is_running and any("stay for the next start" in note.message for note in app._notifications)
        await pilot.press("q")
    assert app.return_code == 0
    file = drafts_file(store_path)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600 and stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    assert file.is_relative_to(_state_folder) and "Half of a thought" in file.read_text()
    assert b"Half of a thought" not in store_path.read_bytes()
    again = make_app(store_path, embedder=None)
    async with again.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("n")
        dialog = again.screen
        assert isinstance(dialog, RememberScreen)
        assert dialog.query_one(TextArea).text == "Half of a thought about Porto"
        assert dialog.query_one("#reason", Input).value == "from the call"
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert json.loads(file.read_text()) == {"drafts": []}
    with open_store(store_path) as runtime:
        (change,) = runtime.memory.for_scope("notes").changes(1).changes
        assert change.reason == "from the call"


async def test_an_upsert_with_the_metadata_left_blank_keeps_the_entrys_metadata(app, runtime):
    notes = runtime.memory.for_scope("notes")
    notes.remember(RememberRequest(entries=(NewEntry(entry_id="city", text="Ana lives in Lisbon.",
                                                     metadata={"source": "chat", "turn": 3}),)))
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        for text, metadata in (("Ana lives in Porto.", ""), ("Ana lives in Braga.", "{}")):
            await pilot.press("n")
            dialog = app.screen
            dialog.query_one("#id", Input).value = "city"
            dialog.query_one("#metadata", Input).value = metadata
            dialog.query_one(Checkbox).value = True
            dialog.query_one(TextArea).text = text
            await pilot.press("ctrl+s")
            await settle(pilot)
            assert status(app).startswith("upserted 'city'")
            if not metadata:  # blank: unchanged
                assert notes.get_entry("city").entry.metadata == {"source": "chat", "turn": 3}
        assert notes.get_entry("city").entry.metadata == {}  # an explicit {} clears it
        assert notes.get_entry("city").entry.version == 3


# --- 5. writes carry a reason, and the history shows it -------------------------------------------------------------


async def test_a_retire_carries_its_reason_and_the_history_shows_it(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await open_entry(pilot, "n2")
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        app.screen.query_one("#reason", Input).value = "the venue is booked"
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen)
        history = app.screen.query_one("#history")
        assert "the venue is booked" in history.cells_at(history.row_count - 1)
    assert runtime.memory.for_scope("notes").history("n2").events[-1].reason == "the venue is booked"
