"""``w``: who changed what, just now: the latest changes of a scope (or of the scopes changed last), newest first,
with the time, the operation, the entry and the reason its write gave (pcmem keeps no writer's name: the reason is
what agents and the CLI say about themselves)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Label

from pcmem_tui.format import one_line, plain, when
from pcmem_tui.recent import RecentChange
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.table import Cell, ListTable
from pcmem_tui.widgets import short_id

COLUMNS = (("ago", 6), ("rev", 5), ("operation", 10), ("entry", 10), ("reason", 16), ("text", None))
#: Changes from several scopes (the scopes screen's ``w``) name each one's scope after its time.
SCOPE_COLUMN = ("scope", 10)


def ago(moment: datetime, now: datetime | None = None) -> str:
    """How long ago, at a glance: ``12 s``, ``4 min``, ``3 h``, ``2 d``."""
    seconds = max(0, int(((now or datetime.now(UTC)) - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


class RecentScreen(ModalScreen[RecentChange | None]):
    """The changes, newest first; enter opens the entry changed (a forgotten one cannot be opened)."""

    BINDINGS: ClassVar = [Binding("escape,w", "close", "Close")]

    def __init__(self, where: str, changes: list[RecentChange]) -> None:
        super().__init__(classes="dialog")
        self.where, self.changes = where, changes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(Text(f"Changed just now in {self.where} (newest first) — enter opens the entry, / filters"),
                        classes="dialog-question")
            several = len({change.scope for change in self.changes}) > 1
            yield ListTable(COLUMNS, _cells if several else _one_scope_cells, _words, id="recent")

    def on_mount(self) -> None:
        table = self.query_one(ListTable)
        if len({change.scope for change in self.changes}) > 1:
            table.set_columns((COLUMNS[0], SCOPE_COLUMN, *COLUMNS[1:]))  # (its cells: _cells)
        table.set_rows([(str(index), change) for index, change in enumerate(self.changes)])
        table.focus()

    def on_list_table_row_selected(self, event: ListTable.RowSelected) -> None:
        event.stop()
        change = self.changes[int(event.key or 0)]
        if change.operation != "forget":
            self.dismiss(change)

    def action_close(self) -> None:
        self.dismiss(None)


def show_recent(screen: Screen, where: str, changes: list[RecentChange]) -> None:
    """The changes over ``screen``; enter on one opens that entry at the head."""
    def opened(change: RecentChange | None) -> None:
        if change is not None:
            screen.app.push_screen(EntryScreen(change.scope, change.entry_id))

    if not changes:
        screen.notify(f"nothing changed in {where} yet", title="pcmem", markup=False)
        return
    screen.app.push_screen(RecentScreen(where, changes), opened)


def _cells(change: RecentChange) -> tuple[Cell, ...]:
    """The cells of every column; a table of one scope's changes has no scope column and takes one cell less."""
    return (ago(change.at), plain(change.scope, "bold"), f"r{change.revision}", change.operation,
            plain(short_id(change.entry_id, 10), "cyan"), one_line(change.reason or "", "italic"),
            one_line(change.text))


def _one_scope_cells(change: RecentChange) -> tuple[Cell, ...]:
    cells = _cells(change)
    return (cells[0], *cells[2:])


def _words(change: RecentChange) -> str:
    return f"{change.scope} r{change.revision} {change.operation} {change.entry_id} {change.reason or ''} " \
           f"{when(change.at)} {change.text}"
