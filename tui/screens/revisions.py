"""Pick one revision of a scope: a list like every other (``/`` filters it, ``:`` jumps to a row or a match)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label

from pcmem import RevisionInfo
from pcmem_tui.format import count, count_cell, plain, when
from pcmem_tui.table import Cell, ListTable

COLUMNS = (("rev", 5), ("operation", 10), ("at (UTC)", 19), ("changes", 7), ("reason", None))


class RevisionScreen(ModalScreen[int | None]):
    """Pick one revision of a scope (newest first); its manifest replaces the entries list."""

    BINDINGS: ClassVar = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, scope: str, revisions: list[RevisionInfo], current: int) -> None:
        super().__init__(classes="dialog")
        self.scope, self.revisions, self.current = scope, revisions, current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(Text(f"Revisions of {self.scope!r} — enter picks one, / filters, : jumps"),
                        classes="dialog-question")
            yield ListTable(COLUMNS, _cells, _words, id="revisions")

    def on_mount(self) -> None:
        table = self.query_one(ListTable)
        table.set_rows([(str(info.revision), info) for info in reversed(self.revisions)], keep=str(self.current))
        table.focus()

    def on_list_table_row_selected(self, event: ListTable.RowSelected) -> None:
        event.stop()
        self.dismiss(int(event.key or 0))

    def action_cancel(self) -> None:
        self.dismiss(None)


def _cells(info: RevisionInfo) -> tuple[Cell, ...]:
    return (plain(f"r{info.revision}", "bold"), info.operation, when(info.created_at), count_cell(info.change_count),
            plain(info.reason or "", "dim"))


def _words(info: RevisionInfo) -> str:
    return f"r{info.revision} {info.operation} {when(info.created_at)} {count(info.change_count, 'change')} " \
           f"{info.reason or ''}"
