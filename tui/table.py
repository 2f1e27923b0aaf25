"""The one list widget of every screen: draws only the rows on screen, filters with ``/`` and jumps with ``:``.

Textual's DataTable measures every cell of every row when rows are added (15,000 measurements for a 3,000-entry
scope) and keeps a styled copy of each cell, so a 10,000-entry scope took seconds to open, sort or filter, and every
outside write that reloaded it made ``j`` lag. This widget keeps the screen's own items in a plain list, gives each
column a width known in advance (one flexible column takes the room left), and turns an item into cells only when
its row is drawn (Textual's line API: :meth:`render_line` for the lines on screen). Sorting, filtering and reloading
cost a pass over a Python list; drawing costs the visible rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from pcmem_tui.prompt import ListPrompt

#: What a cell may hold: plain text (never markup: entry texts are user data) or styled Text.
Cell = str | int | Text
#: A column: (label, width in cells); one column may have width ``None``: it takes the room the others leave.
ColumnSpec = tuple[str, int | None]
#: Cells of a row, made from the screen's item only when the row is drawn.
CellMaker = Callable[[Any], Sequence[Cell]]
#: The words a filter looks in (text, id, kind…), made from the item the first time a filter needs them.
WordsMaker = Callable[[Any], str]

#: Each cell is padded by one space on each side, like DataTable's cells.
PADDING = 1
#: The flexible column never shrinks below this (a narrow terminal crops the fixed columns instead).
MIN_FLEX = 12


def matches(needle: str, haystack: str) -> bool:
    """Case-insensitive: every word of the filter occurs in the (case-folded) haystack."""
    return all(word in haystack for word in needle.casefold().split())


def column_widths(columns: Sequence[ColumnSpec], room: int) -> list[int]:
    """Each column's width in cells for a table ``room`` cells wide (without its scrollbar)."""
    fixed = sum(width for _, width in columns if width is not None)
    flex = max(room - fixed - 2 * PADDING * len(columns), MIN_FLEX)
    return [flex if width is None else width for _, width in columns]


@dataclass(frozen=True)
class Jump:
    """Where ``:`` goes: a row number (1 = the first row shown), else the next row whose words hold the text."""

    target: str

    def row(self, table: ListTable) -> int | None:
        wanted = self.target.strip()
        if wanted.isdigit():
            return min(max(int(wanted), 1), table.row_count) - 1 if table.row_count else None
        count = table.row_count
        for step in range(1, count + 1):  # from the row after the cursor, wrapping round
            row = (table.cursor_row + step) % count
            if matches(wanted, table.words_at(row)):
                return row
        return None


class ListTable(ScrollView, can_focus=True):
    """Rows of the screen's items with a row cursor; keys of lazygit and less (j/k, g/G, Home/End, PgUp/PgDn),
    ``/`` narrows the rows to those holding every typed word, ``:`` jumps to a row number or the next match."""

    BINDINGS: ClassVar = [
        Binding("enter", "select", "Open", show=False),
        Binding("j,down", "cursor(1)", "Down", show=False),
        Binding("k,up", "cursor(-1)", "Up", show=False),
        Binding("g,home", "first", "First row", show=False),
        Binding("G,end", "last", "Last row", show=False),
        Binding("pagedown,ctrl+f,space", "page(1)", "Page down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("ctrl+d", "half_page(1)", "Half a page down", show=False),
        Binding("ctrl+u", "half_page(-1)", "Half a page up", show=False),
        Binding("slash", "prompt('filter')", "Filter", show=False),
        Binding("colon", "prompt('jump')", "Jump", show=False),
        # esc peels one layer at a time (k9s): a kept filter first; with none, esc goes on to the screen (back)
        Binding("escape", "clear_filter", "Clear the filter", show=False),
    ]

    COMPONENT_CLASSES: ClassVar = {"list-table--header", "list-table--cursor", "list-table--even-row"}

    DEFAULT_CSS = """
    ListTable {
        height: 1fr;
        overflow-x: hidden;
        background: $surface;
        color: $foreground;
        & > .list-table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .list-table--even-row { background: $surface-lighten-1 50%; }
        & > .list-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .list-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
    }
    """

    class RowHighlighted(Message):
        """The cursor moved to another row (or the rows under it changed)."""

        def __init__(self, table: ListTable, row: int, key: str | None) -> None:
            super().__init__()
            self.table, self.row, self.key = table, row, key

        @property
        def control(self) -> ListTable:
            return self.table

    class RowSelected(RowHighlighted):
        """Enter (or a click on the cursor's row)."""

    def __init__(self, columns: Sequence[ColumnSpec], cells: CellMaker, words: WordsMaker | None = None, *,
                 zebra_stripes: bool = False, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.columns = tuple(columns)
        self._cells = cells
        self._words = words or (lambda item: " ".join(str(cell) for cell in cells(item)))
        self.zebra_stripes = zebra_stripes
        self._keys: list[str] = []  # every row, in the screen's order
        self._items: list[Any] = []
        self._haystacks: list[str] | None = None  # case-folded words per row, made on the first filter
        self._words_made: dict[str, tuple[Any, str]] = {}  # key → (item, words) kept across set_rows for the filter
        self._shown: list[int] = []  # indices into _keys of the rows the filter lets through
        self._needle = ""
        self.cursor_row = 0
        self._lines: dict[tuple[int, bool], Strip] = {}  # drawn rows by (index, under the cursor)

    # --- what the screen gives and reads ------------------------------------------------------------------------

    def set_rows(self, rows: Sequence[tuple[str, Any]], *, keep: str | None = None) -> None:
        """Show ``rows`` (key, item) in this order. The cursor stays on its row's key (or ``keep``) when that row is
        still shown, else at the same position."""
        previous = keep if keep is not None else self.cursor_key
        if self._haystacks is not None:  # a filter's words stay made for the items that are the same objects
            self._words_made = dict(zip(self._keys, zip(self._items, self._haystacks, strict=True), strict=True))
        self._keys = [key for key, _ in rows]
        self._items = [item for _, item in rows]
        self._haystacks = None
        self._apply_filter(previous)
        self._words_made = {}

    def set_columns(self, columns: Sequence[ColumnSpec]) -> None:
        self.columns = tuple(columns)
        self._redraw()

    def redraw_rows(self) -> None:
        """The screen changed what its items' cells show (a mark, say): draw the rows on screen again."""
        self._redraw()

    @property
    def row_count(self) -> int:
        """Rows shown (after the filter)."""
        return len(self._shown)

    @property
    def total_count(self) -> int:
        return len(self._keys)

    @property
    def row_keys(self) -> list[str]:
        return [self._keys[index] for index in self._shown]

    @property
    def cursor_key(self) -> str | None:
        return self._keys[self._shown[self.cursor_row]] if self._shown else None

    def item_at(self, row: int) -> Any:
        return self._items[self._shown[row]]

    def cells_at(self, row: int) -> list[str]:
        """The row's cells as plain text, uncut (what a test or a copy wants, not what fits)."""
        return [str(cell) for cell in self._cells(self.item_at(row))]

    def words_at(self, row: int) -> str:
        return self._haystack()[self._shown[row]]

    @property
    def widths(self) -> list[int]:
        return column_widths(self.columns, self.scrollable_content_region.width)

    # --- the filter ----------------------------------------------------------------------------------------------

    @property
    def filter(self) -> str:
        return self._needle

    def set_filter(self, needle: str) -> None:
        """Narrow the rows to those holding every word of ``needle``; the cursor stays on its row if it is shown."""
        if needle != self._needle:
            self._needle = needle
            self._apply_filter(self.cursor_key)

    def _haystack(self) -> list[str]:
        if self._haystacks is None:
            made = self._words_made  # from the rows before set_rows: an agent's write changes a row or two

            def words(key: str, item: Any) -> str:
                then = made.get(key)
                return then[1] if then is not None and then[0] is item else self._words(item).casefold()

            self._haystacks = [words(key, item) for key, item in zip(self._keys, self._items, strict=True)]
        return self._haystacks

    def _apply_filter(self, keep: str | None) -> None:
        if self._needle.strip():
            haystacks, words = self._haystack(), self._needle.casefold().split()
            self._shown = [i for i, haystack in enumerate(haystacks) if all(w in haystack for w in words)]
        else:
            self._shown = list(range(len(self._keys)))
        position = self.cursor_row
        if keep is not None:
            position = next((row for row, index in enumerate(self._shown) if self._keys[index] == keep), position)
        self._set_lines(len(self._shown) + 1)  # + the header line
        self._move(position, announce=True)
        self._redraw()

    def _set_lines(self, lines: int) -> None:
        """The scroll range for ``lines``. A list of fixed height (every screen's: ``1fr``) takes a new row count
        without a layout of the screen, which would repaint every widget of it on each outside write that adds a
        row; only when its scrollbar appears or goes, or its height follows its rows (a dialog), is one needed."""
        size = Size(self.scrollable_content_region.width, lines)
        if size == self.virtual_size:
            return
        height = self.styles.height
        bar_before = self.show_vertical_scrollbar
        bar_after = self.styles.overflow_y == "scroll" or lines > self.container_size.height
        if height is None or height.is_auto or bar_before != bar_after or not self.container_size.height:
            self.virtual_size = size
            return
        self.set_reactive(ListTable.virtual_size, size)
        if bar_after:
            self.vertical_scrollbar.window_virtual_size = lines
        self.refresh()

    # --- the cursor ----------------------------------------------------------------------------------------------

    def move_cursor(self, row: int) -> None:
        self._move(row, announce=True)

    def move_to_key(self, key: str) -> bool:
        """Put the cursor on ``key``'s row; whether it is shown."""
        keys = self.row_keys
        if key in keys:
            self._move(keys.index(key), announce=True)
            return True
        return False

    def _move(self, row: int, *, announce: bool) -> None:
        row = min(max(row, 0), max(len(self._shown) - 1, 0))
        moved = row != self.cursor_row
        for old in (self.cursor_row, row):  # only the two rows the cursor leaves and enters are drawn again
            self._forget_line(old)
        self.cursor_row = row
        self._scroll_to_cursor()
        if moved or announce:
            self.post_message(self.RowHighlighted(self, row, self.cursor_key))

    def _scroll_to_cursor(self) -> None:
        visible = max(self.scrollable_content_region.height - 1, 1)  # the header takes one line
        top = min(round(self.scroll_y), max(round(self.max_scroll_y), 0))  # fewer rows than before: no blank end
        if self.cursor_row < top:
            top = self.cursor_row
        elif self.cursor_row >= top + visible:
            top = self.cursor_row - visible + 1
        if top != round(self.scroll_y):
            self.scroll_to(y=top, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self._move(self.cursor_row + step, announce=False)

    def action_page(self, direction: int) -> None:
        self._move(self.cursor_row + direction * max(self.scrollable_content_region.height - 2, 1), announce=False)

    def action_half_page(self, direction: int) -> None:
        self._move(self.cursor_row + direction * max((self.scrollable_content_region.height - 1) // 2, 1),
                   announce=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return bool(self._needle.strip()) if action == "clear_filter" else True

    def action_clear_filter(self) -> None:
        """esc on a list narrowed by a kept filter: the whole list again, and its prompt goes."""
        self.set_filter("")
        ListPrompt.close_for(self)

    def action_first(self) -> None:
        self._move(0, announce=False)

    def action_last(self) -> None:
        self._move(len(self._shown) - 1, announce=False)

    def action_select(self) -> None:
        if self._shown:
            self.post_message(self.RowSelected(self, self.cursor_row, self.cursor_key))

    def action_prompt(self, mode: str) -> None:
        ListPrompt.open(self, mode)

    def jump(self, target: str) -> bool:
        """``:`` — whether a row was found (the cursor moves there)."""
        row = Jump(target).row(self)
        if row is not None:
            self._move(row, announce=True)
        return row is not None

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:  # the header
            return
        row = round(self.scroll_y) + offset.y - 1
        if 0 <= row < len(self._shown):
            if row == self.cursor_row:
                self.action_select()
            else:
                self._move(row, announce=False)

    # --- drawing -------------------------------------------------------------------------------------------------

    def _redraw(self) -> None:
        self._lines.clear()
        self.refresh()

    def _forget_line(self, row: int) -> None:
        for cursor in (True, False):
            self._lines.pop((row, cursor), None)
        self.refresh_line(row + 1)  # content line: the header is line 0

    def _on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self._shown) + 1)
        self._redraw()
        self.call_after_refresh(self._scroll_to_cursor)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()

    def _on_focus(self, event: events.Focus) -> None:
        self._lines.clear()
        self.refresh()

    def _on_blur(self, event: events.Blur) -> None:
        self._lines.clear()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            header = [Text(label) for label, _ in self.columns]
            return self._strip(header, self.get_component_rich_style("list-table--header"), width)
        row = round(self.scroll_y) + y - 1
        if not 0 <= row < len(self._shown):
            return Strip.blank(width, self.rich_style)
        cursor = row == self.cursor_row
        line = self._lines.get((row, cursor))
        if line is None or line.cell_length != width:
            style = self.rich_style
            if self.zebra_stripes and row % 2:
                style += self.get_component_rich_style("list-table--even-row")
            if cursor:
                style += self.get_component_rich_style("list-table--cursor")
            line = self._strip(self._cells(self.item_at(row)), style, width)
            if len(self._lines) > 512:  # a few screens' worth: scrolling back is cheap, memory stays flat
                self._lines.clear()
            self._lines[(row, cursor)] = line
        return line

    def _strip(self, cells: Sequence[Cell], style: Style, width: int) -> Strip:
        line = Text(no_wrap=True, end="")
        pad = " " * PADDING
        for cell, cell_width in zip(cells, column_widths(self.columns, width), strict=False):
            shown = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            if shown.justify == "right" and shown.cell_len < cell_width:
                shown.pad_left(cell_width - shown.cell_len)
            shown.truncate(cell_width, overflow="ellipsis", pad=True)
            line.append(pad)
            line.append_text(shown)
            line.append(pad)
        segments = [Segment(text, (style + segment_style) if segment_style else style, control)
                    for text, segment_style, control in line.render(self.app.console)]
        return Strip(segments).extend_cell_length(width, style).crop(0, width)
