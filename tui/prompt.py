"""The one-line prompt under a list: ``/`` filters the rows as you type, ``:`` jumps to a row number or a match.

One prompt per list, mounted under it the first time it is asked for, so every list of every screen (and dialog)
gets the same two keys without each screen composing and wiring its own filter field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input

from pcmem_tui.widgets import StatusLine

if TYPE_CHECKING:  # the table opens its prompt (pcmem_tui.table imports this module); the prompt only names it
    from pcmem_tui.table import ListTable

PLACEHOLDERS = {
    "filter": "filter: rows holding every word (text, id, kind…); enter keeps it, esc clears it",
    "jump": "jump to: a row number, or text (the next row holding it); enter goes, esc cancels",
}


class ListPrompt(Input):
    """Drives the list it belongs to: a filter narrows it on each keystroke; a jump moves its cursor on enter."""

    BINDINGS: ClassVar = [Binding("escape", "close", "Close", show=False)]

    DEFAULT_CSS = """
    ListPrompt {
        height: 3;
    }
    """

    def __init__(self, table: ListTable) -> None:
        super().__init__(id=f"{table.id or 'list'}-prompt", classes="list-prompt")
        self.table = table
        self.mode = "filter"

    @classmethod
    def open(cls, table: ListTable, mode: str) -> ListPrompt:
        """The table's prompt in ``mode``, shown and focused (mounted under the table the first time)."""
        prompt = next((p for p in table.screen.query(cls) if p.table is table), None)
        if prompt is None:
            prompt = cls(table)
            assert isinstance(table.parent, Widget)
            table.parent.mount(prompt, after=table)
        prompt.mode = mode
        prompt.placeholder = PLACEHOLDERS[mode]
        prompt.value = table.filter if mode == "filter" else ""
        prompt.display = True
        prompt.focus()
        prompt._count()
        return prompt

    @classmethod
    def close_for(cls, table: ListTable) -> None:
        """Hide ``table``'s prompt, if it has one."""
        for prompt in table.screen.query(cls):
            if prompt.table is table:
                prompt.display = False

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.mode == "filter":
            self.table.set_filter(event.value)
            self._count()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.mode == "jump":
            if not self.table.jump(event.value):
                self._say(f"no row {'numbered' if event.value.strip().isdigit() else 'holds'} {event.value.strip()!r}")
            self.value = ""
        self._back(keep=self.mode == "filter" and bool(self.value.strip()))

    def action_close(self) -> None:
        if self.mode == "filter":
            self.table.set_filter("")
        self._back(keep=False)

    def _back(self, *, keep: bool) -> None:
        """Back to the list; a filter that narrows it stays on screen so the narrowing is never a surprise."""
        self.display = keep
        self.table.focus()

    def _count(self) -> None:
        shown, total = self.table.row_count, self.table.total_count
        self.border_subtitle = f"{shown} of {total}" if self.mode == "filter" and self.table.filter else ""

    def _say(self, text: str) -> None:
        lines = self.screen.query(StatusLine)
        if lines:
            lines.first().info(text)
        else:
            self.app.notify(text, markup=False)


def say_filtered(table: ListTable) -> Text:
    """For a title: how many rows a filter lets through, or nothing without a filter."""
    return Text(f" · filter {table.filter!r}: {table.row_count} of {table.total_count}", style="bold") \
        if table.filter.strip() else Text()
