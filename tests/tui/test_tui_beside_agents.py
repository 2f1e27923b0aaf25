"""The TUI beside agents that write all day (issue #45): an open entry stays editable while other entries change,
typed text survives a restart and an upsert, the owner named is a live one, ctrl+z hands the store on, and what
another process just changed is shown.

Real stores (the seeded template of tests/tui/conftest.py), real writer processes, Textual's pilot; no timings.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest
from textual.widgets import Checkbox, Input, TextArea
from tui_pilot import (
    SIZE,
    open_entry,
    open_scope,
    open_store,
    row_keys,
    rows,
    settle,
    status,
    text_of,
)

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem_tui.app import make_app
from pcmem_tui.drafts import drafts_file
from pcmem_tui.messages import StoreStateChanged
from pcmem_tui.screens.dialogs import ConfirmScreen, KeepDraftScreen, RememberScreen, ReviseScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.session import process_alive
from pcmem_tui.table import ListTable
from pcmem_tui.widgets import StoreBar, short_id

WRITE = """
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
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
        app.watch_store()  # the watcher's first look (once a second): the heads as they were
        await settle(pilot)
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


# --- 3. the owner named is a live one; ctrl+z hands the store on ------------------------------------------------------

OWNER = """
import sys, pcmem
runtime = pcmem.open(sys.argv[1], embedder=None)  # the owner: it serves every other pcmem process
print("owner", flush=True)
sys.stdin.readline()
"""


def start_owner(path) -> subprocess.Popen[str]:  # noqa: ANN001
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert owner.stdout is not None and owner.stdout.readline().strip() == "owner"
    return owner


def store_bar(app) -> str:  # noqa: ANN001
    return str(app.screen.query_one(StoreBar).render())


async def test_the_status_bar_never_names_a_killed_owner(store_path):
    """After a kill -9 of the owner the bar named the dead process for 50 s (until a file change made the TUI read):
    the owner is checked live, and the watcher reconnects at once."""
    owner = start_owner(store_path)
    try:
        app = make_app(store_path, embedder=None, lock_timeout=5)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert f"client of process {owner.pid}" in store_bar(app)
            owner.kill()
            owner.wait(timeout=30)
            app.watch_store()  # the watcher's next tick (once a second), without the wait
            await settle(pilot)
            app.screen.post_message(StoreStateChanged())
            await settle(pilot)
            assert str(owner.pid) not in store_bar(app) and " · owner · " in store_bar(app)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(timeout=30)


TUI = """
import os, sys
from pcmem_tui.app import make_app
open(sys.argv[2], "w").write(str(os.getpid()))
make_app(sys.argv[1], embedder=None, lock_timeout=5).run()
"""

CLAIM = """
import sys, pcmem
runtime = pcmem.open(sys.argv[1], embedder=None, lock_timeout=5)
runtime.memory.for_scope("notes").remember("Written while the TUI was stopped.")
print("owner" if runtime.owner_pid is None else f"client of {runtime.owner_pid}", flush=True)
sys.stdin.readline()
"""


class Terminal:
    """A real terminal: a tmux server of its own running bash, 120×30."""

    def __init__(self, tmp_path) -> None:  # noqa: ANN001
        self.socket = str(tmp_path / "tmux.sock")
        self._tmux("new-session", "-d", "-x", "120", "-y", "30", "bash --norc --noprofile")

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True, capture_output=True, text=True,
                              timeout=30).stdout

    def type(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p")

    def wait_for(self, text: str, seconds: float = 90) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in (shown := self.screen()):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"{text!r} did not show in {seconds} s:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")
@pytest.mark.parametrize("how", ["ctrl+z", "SIGTSTP"])
def test_suspended_as_owner_the_tui_hands_the_store_on_and_comes_back_as_a_client(store_path, tmp_path, how):
    """ctrl+z did nothing; a SIGTSTP from outside stopped the owner with the file held, and every agent's call waited
    on it. Stopped, the TUI has released the store: another process takes it over and writes at once; after fg the
    TUI is that process's client."""
    terminal = Terminal(tmp_path)
    pid_file = tmp_path / "tui.pid"
    claim = None
    try:
        script = tmp_path / "tui.py"
        script.write_text(TUI)
        # from the store's folder: the status bar shows the path as given, and a short one leaves room for the rest
        terminal.type(f"cd {store_path.parent} && {sys.executable} {script} {store_path.name} {pid_file}", "Enter")
        terminal.wait_for("live · read")
        if how == "ctrl+z":
            terminal.type("C-z")
        else:
            os.kill(int(pid_file.read_text()), signal.SIGTSTP)
        terminal.wait_for("pcmem tui: stopped; released the store")
        terminal.wait_for("Stopped")
        claim = subprocess.Popen([sys.executable, "-c", CLAIM, str(store_path)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert claim.stdout is not None and claim.stderr is not None
        said = claim.stdout.readline().strip()
        assert said == "owner", claim.stderr.read() if claim.poll() is not None else said  # it took the file over
        terminal.type("fg", "Enter")
        terminal.wait_for(f"client of process {claim.pid}")
        terminal.type("q")
        tui = int(pid_file.read_text())
        for _ in range(300):  # q quits: the process ends
            if not process_alive(tui):
                break
            time.sleep(0.1)
        assert not process_alive(tui)
    finally:
        if claim is not None:
            claim.kill()
            claim.wait(timeout=30)
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        terminal.close()


# --- 9. what another process just changed ------------------------------------------------------------------------------

WRITE_WITH_REASON = """
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    notes = runtime.memory.for_scope("notes")
    notes.remember(pcmem.RememberRequest(entries=(pcmem.NewEntry(text="An agent's new note."),), reason="agent A"))
    notes.retire(pcmem.RetireRequest(entry_id="n2", expected_version=1, reason="agent B: booked"))
"""


async def test_rows_another_process_changed_are_marked_for_a_moment_and_w_says_who_changed_what(store_path,
                                                                                              monkeypatch):
    app = make_app(store_path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        table = screen.query_one(ListTable)
        app.watch_store()  # the watcher's first look (once a second): the heads as they were
        await settle(pilot)
        subprocess.run([sys.executable, "-c", WRITE_WITH_REASON, str(store_path)], check=True, timeout=120)
        app.watch_store()
        await settle(pilot)
        marked = {key for row, key in enumerate(row_keys(table)) if rows(table)[row][0].startswith("✱ ")}
        new = next(key for key in row_keys(table) if key not in ("n1", "n2"))
        assert marked == {new, "n2"}  # the new entry and the retired one; n1 did not change
        monkeypatch.setattr("pcmem_tui.recent.clock", lambda: time.monotonic() + 60)
        screen._fade()  # the mark's time is up
        assert not any(row[0].startswith("✱ ") for row in rows(table))
        await pilot.press("w")
        await settle(pilot)
        recent = app.screen.query_one(ListTable)
        shown = rows(recent)
        assert [(row[1], row[2], row[3], row[4]) for row in shown[:2]] == [  # one scope: no scope column
            ("r3", "retire", "n2", "agent B: booked"), ("r2", "remember", short_id(new, 10), "agent A")]
        await pilot.press("enter")  # opens the entry changed
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and app.screen.entry_id == "n2"


async def test_the_users_own_writes_are_not_marked_as_another_processs(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        await pilot.press("n")
        app.screen.query_one(TextArea).text = "My own note."
        await pilot.press("ctrl+s")
        await settle(pilot)
        screen.refresh_from_store()  # the watcher sees the file changed by this very write
        await settle(pilot)
        assert not any(row[0].startswith("✱ ") for row in rows(screen.query_one(ListTable)))


async def test_w_on_the_scopes_screen_lists_the_scopes_changed_last_with_each_changes_scope(app):
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        recent = app.screen.query_one(ListTable)
        assert [label for label, _ in recent.columns][:3] == ["ago", "scope", "rev"]
        assert {row[1] for row in rows(recent)} == {"notes", "pcmem-demo"}
        assert (rows(recent)[0][1], rows(recent)[0][2]) == ("notes", "r1")  # written after the demo scope
