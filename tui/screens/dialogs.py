"""Modal dialogs: confirm a write, write a new entry, pick a revision."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from pcmem import InputError, NewEntry, RevisionInfo
from pcmem_tui.format import count, when


class ConfirmScreen(ModalScreen[bool]):
    """Yes or no to one write; ``y``/``n`` answer without the mouse."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__(classes="dialog")
        self.question, self.yes = question, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Static(Text(self.question), classes="dialog-question")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes} (y)", variant="error", id="yes")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


@dataclass(frozen=True)
class Draft:
    """A validated entry to remember in ``scope``."""

    scope: str
    entry: NewEntry


class RememberScreen(ModalScreen[Draft | None]):
    """Write a new entry. pcmem validates it here (kind, text limits) so mistakes show before anything is written."""

    BINDINGS = [Binding("ctrl+s", "save", "Save"), Binding("escape", "cancel", "Cancel")]

    def __init__(self, scope: str | None) -> None:
        super().__init__(classes="dialog")
        self.scope = scope

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(Text(f"Remember in {self.scope!r}" if self.scope else "Remember"), classes="dialog-question")
            if self.scope is None:
                yield Input(placeholder="scope", id="scope")
            yield Input(value="fact", placeholder="kind", id="kind")
            yield TextArea(id="text", soft_wrap=True)
            yield Static(id="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (ctrl+s)", variant="primary", id="save")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        for widget in self.query("#scope, #kind, #text"):
            widget.border_title = widget.id
        self.query_one("#scope" if self.scope is None else "#text").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_save() if event.button.id == "save" else self.action_cancel()

    def action_save(self) -> None:
        scope = self.scope if self.scope is not None else self.query_one("#scope", Input).value.strip()
        try:
            if not scope:
                raise InputError("scope must not be empty")
            entry = NewEntry(text=self.query_one(TextArea).text, kind=self.query_one("#kind", Input).value)
        except InputError as error:
            self.query_one("#dialog-error", Static).update(Text(f"✗ {error}", style="red"))
            return
        self.dismiss(Draft(scope=scope, entry=entry))

    def action_cancel(self) -> None:
        self.dismiss(None)


class RevisionScreen(ModalScreen[int | None]):
    """Pick one revision of a scope (newest first); its manifest replaces the entries list."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, scope: str, revisions: list[RevisionInfo], current: int) -> None:
        super().__init__(classes="dialog")
        self.scope, self.revisions, self.current = scope, revisions, current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(Text(f"Revisions of {self.scope!r} — enter picks one"), classes="dialog-question")
            yield OptionList(*[_option(info) for info in reversed(self.revisions)], id="revisions")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = len(self.revisions) - self.current
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))

    def action_cancel(self) -> None:
        self.dismiss(None)


def _option(info: RevisionInfo) -> Option:
    label = Text(f"r{info.revision:<4} {info.operation:<10} {when(info.created_at)}  {count(info.change_count, 'change')}")
    return Option(label, id=str(info.revision))
