"""Forget for good: an entry (``x`` on an entry or an entries row) or a whole scope (``x`` on the scopes screen).

Unlike every other write, forgetting changes the past and cannot be undone, so the dialog says exactly what goes:
the entry's text and how many versions of it, or the scope's entry counts. A scope is forgotten only after its name
is typed (like deleting a repository on a forge): ``y`` alone is too easy to press on the wrong row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static

from pcmem import MemoryEntry, ScopeSummary
from pcmem_tui.format import count
from pcmem_tui.screens.dialogs import ConfirmScreen, Outcome, WriteDialog, confirm_question

if TYPE_CHECKING:
    from pcmem_tui.session import Session

#: What any forget erases, said in every forget dialog.
FOR_GOOD = ("in every revision, for good: the history keeps only a tombstone (the ids). This cannot be undone; "
            "retire (d) hides an entry and keeps it.")


def forget_entry_question(entry: MemoryEntry, scope: str, versions: int | None) -> str:
    """``versions``: how many the entry has had (its head version), ``None`` when the screen does not know it (a
    past revision's list)."""
    what = {None: "every version it ever had", 1: "its only version"}.get(versions, f"all {versions} versions it ever had")
    return confirm_question("forget", entry, scope, f"Erases the text and metadata of {what} {FOR_GOOD}")


class ForgetEntryScreen(ConfirmScreen):
    """``y`` forgets the entry (no compare-and-swap: whatever version it has now goes); ``n`` or esc cancels."""

    asks_reason = False  # a forget keeps only a tombstone

    def __init__(self, session: Session, scope: str, entry: MemoryEntry, versions: int | None) -> None:
        super().__init__(session, scope, entry, "forget", forget_entry_question(entry, scope, versions))

    def write(self) -> Outcome:
        assert self.read is not None
        entry_id = self.read.entry.entry_id
        return Outcome(f"forgot {entry_id!r}", self.session.forget(self.scope, entry_id))


def forget_scope_question(summary: ScopeSummary) -> Text:
    entries = summary.active_count + summary.retired_count
    text = Text.assemble("Forget every entry of ", (repr(summary.scope), "bold"), "?\n")
    text.append(f"{count(summary.active_count, 'active entry', 'active entries')} and "
                f"{count(summary.retired_count, 'retired entry', 'retired entries')} "
                f"(revision {summary.head_revision}): the text and metadata of every version of all {entries} go, "
                f"{FOR_GOOD}\n")
    text.append("The scope stays, empty, and can be written again. Type its name to confirm.", style="bold")
    return text


class ForgetScopeScreen(WriteDialog):
    """Enter writes once the typed name is the scope's; esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, session: Session, summary: ScopeSummary) -> None:
        super().__init__(session, summary.scope)
        self.summary = summary

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Static(forget_scope_question(self.summary), classes="dialog-question")
            yield Input(placeholder=self.summary.scope, id="confirm-scope")
            yield Static(id="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Forget (enter)", variant="error", id="yes")
                yield Button("Cancel (esc)", id="no")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self._confirm()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self._confirm() if event.button.id == "yes" else self.dismiss(None)

    def _confirm(self) -> None:
        if self.query_one(Input).value != self.summary.scope:
            self.show_error(Text(f"✗ type {self.summary.scope!r} exactly to forget it (esc cancels)", style="red"))
            return
        self.submit()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def write(self) -> Outcome:
        result = self.session.forget_scope(self.scope)
        return Outcome(f"forgot {count(len(result.citations), 'entry', 'entries')}", result)  # the scopes screen names it
