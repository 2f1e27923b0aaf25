"""Widgets shared by the screens: the status line, the progress strip and table helpers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, Label, ProgressBar, Static


def key_footer() -> Footer:
    """Compact, without the command palette key (ctrl+p still works): 80 columns hold a screen's keys."""
    return Footer(compact=True, show_command_palette=False)


class StatusLine(Static):
    """One line under the content: what just happened, or the error that stopped it."""

    message = ""

    def info(self, text: str) -> None:
        self._show(text, error=False)

    def error(self, text: str) -> None:
        self._show(f"✗ {text}", error=True)

    def _show(self, text: str, *, error: bool) -> None:
        self.message = text
        self.set_class(error, "error")
        self.update(Text(text))


class WorkProgress(Horizontal):
    """A labelled progress bar, shown only while long work runs (model loading, reranking)."""

    def on_mount(self) -> None:
        if not self.query_one(ProgressBar).progress:
            self.display = False

    def compose(self) -> ComposeResult:
        yield Label(id="progress-stage")
        yield ProgressBar(id="progress-bar", show_eta=False)

    def advance(self, stage: str, done: int, total: int) -> None:
        self.display = True
        counted = stage if total == 0 or stage == "verifying model" else f"{stage} {done}/{total}"
        self.query_one("#progress-stage", Label).update(Text(counted))
        self.query_one(ProgressBar).update(total=total or None, progress=done)

    def finish(self) -> None:
        self.display = False


class Table(DataTable):
    """A row-cursor table with the keys of lazygit and less: j/k, g/G and Home/End move the cursor."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g,home", "first", "First row", show=False),
        Binding("G,end", "last", "Last row", show=False),
    ]

    def __init__(self, **options: object) -> None:
        super().__init__(cursor_type="row", **options)  # type: ignore[arg-type]

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=max(self.row_count - 1, 0))


class FilterBar(Input):
    """Narrows the rows already loaded (no store call, unlike search); escape clears and hides it."""

    BINDINGS = [Binding("escape", "close", "Clear filter")]

    def __init__(self) -> None:
        super().__init__(placeholder="filter the rows shown (text, id, kind)…", id="filter")
        self.display = False

    def action_close(self) -> None:
        self.value = ""
        self.display = False
        self.screen.query_one(DataTable).focus()


def matches(needle: str, *fields: str) -> bool:
    """Case-insensitive: every word of the filter occurs in one of the fields."""
    haystack = " ".join(fields).casefold()
    return all(word in haystack for word in needle.casefold().split())


GENERATED_ID = re.compile(r"^[a-z]+_[0-9a-z]{26}$")


def short_id(entry_id: str, width: int = 12) -> str:
    """Generated ids (``ent_`` + 10 time characters + 16 random) share their start within a batch, so they show
    their random end (``…5ra7kq2m``); other ids show their start, cut with an ellipsis."""
    if len(entry_id) <= width:
        return entry_id
    if GENERATED_ID.match(entry_id):
        return "…" + entry_id[-8:]
    return entry_id[: width - 1] + "…"


Row = tuple[str, Sequence[object]]
#: (label, width); one column may have width ``None``: it takes the room the others leave.
ColumnSpec = tuple[str, int | None]


def fill_table(table: DataTable, columns: Sequence[ColumnSpec], rows: Iterable[Row], room: int) -> None:
    """Replace columns and rows, keeping the cursor on the same row key when it is still there.

    Every column gets an explicit width (``room`` is the table's width in cells): auto-sized columns are measured
    lazily by DataTable and can render once at their label's width, which made screenshots flaky.
    """
    previous = selected_key(table)
    table.clear(columns=True)
    for label, width in columns:
        table.add_column(label, key=label, width=width if width is not None else flex_width(columns, room))
    for key, cells in rows:
        table.add_row(*cells, key=key)
    keys = [row.key.value for row in table.ordered_rows]
    if previous in keys:
        table.move_cursor(row=keys.index(previous), animate=False)


def flex_width(columns: Sequence[ColumnSpec], room: int) -> int:
    """What is left for the flexible column: each column pads one cell each side; 2 cells for a scrollbar."""
    fixed = sum(width for _, width in columns if width is not None)
    return max(room - fixed - 2 * len(columns) - 2, 12)


def selected_key(table: DataTable) -> str | None:
    """The row key under the cursor, or ``None`` for an empty table."""
    if table.row_count == 0:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
