"""A scrollable text box with the keys of ``less``: ``j``/``k`` a line, ``space``/``b`` a page, ``g``/``G`` the ends.

Textual's VerticalScroll scrolls with the arrow keys only; on the entry screen ``j``/``k`` move the history table's
cursor, and pressed in the focused text they did nothing, so a long text could only be read with the arrows.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.containers import VerticalScroll

from pcmem_tui.table import ListTable


class Pager(VerticalScroll, can_focus=True):
    BINDINGS = [
        Binding("j", "scroll_down", "Scroll down", show=False),
        Binding("k", "scroll_up", "Scroll up", show=False),
        Binding("space", "page_down", "Page down", show=False),
        Binding("b", "page_up", "Page up", show=False),
        Binding("g", "scroll_home", "Top", show=False),
        Binding("G", "scroll_end", "Bottom", show=False),
        Binding("escape", "leave", "Stop scrolling", show=False),
    ]

    def action_leave(self) -> None:
        """esc leaves scroll mode for the screen's list (the entry's history), one layer at a time: the next esc
        goes back a screen."""
        tables = self.screen.query(ListTable)
        if tables:
            tables.first().focus()
        else:
            self.screen.set_focus(None)
