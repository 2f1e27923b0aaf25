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

COLUMNS = (("ago", 6), ("scope", 12), ("rev", 6), ("operation", 10), ("entry", 14), ("reason", 18), ("text", None))


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
            yield ListTable(COLUMNS, _cells, _words, id="recent")

    def on_mount(self) -> None:
        table = self.query_one(ListTable)
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
    return (ago(change.at), plain(change.scope, "bold"), f"r{change.revision}", change.operation,
            plain(change.entry_id, "cyan"), one_line(change.reason or "", "italic"), one_line(change.text))


def _words(change: RecentChange) -> str:
    return f"{change.scope} r{change.revision} {change.operation} {change.entry_id} {change.reason or ''} " \
           f"{when(change.at)} {change.text}"
