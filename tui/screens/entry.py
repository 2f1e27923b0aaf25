"""One entry as it stands in one revision: full text, citation, history, and what each revision changed."""

from __future__ import annotations

import json

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Header, Static

from pcmem import HistoryEvent, MemoryEntry
from pcmem_tui.diff import describe_event
from pcmem_tui.format import preview, state_text, when
from pcmem_tui.messages import EntryLoaded
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.session import EntryDetail
from pcmem_tui.widgets import StatusLine, fill_table, flex_width, key_footer

HISTORY_COLUMNS = (("rev", 4), ("operation", 10), ("state", 7), ("ver", 4), ("at (UTC)", 19), ("text", None))


class EntryScreen(StoreScreen):
    BINDINGS = [Binding("c", "copy_citation", "Copy citation")]

    def __init__(self, scope: str, entry_id: str, revision: int | None = None) -> None:
        super().__init__()
        self.scope, self.entry_id, self.revision = scope, entry_id, revision
        self.detail: EntryDetail | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="entry-body"):
            yield Static(id="entry-head", classes="title")
            yield Static(id="entry-text")
            yield Static(id="entry-meta")
            yield DataTable(id="history", cursor_type="row")
            yield Static(id="diff")
        yield StatusLine()
        yield key_footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.scope} › {self.entry_id}"
        self.query_one("#entry-text").border_title = "text"
        self.query_one("#history").border_title = "history"
        self.query_one("#diff").border_title = "change"
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        self.deliver(lambda: self.session.entry(self.scope, self.entry_id, self.revision), EntryLoaded)

    def on_entry_loaded(self, message: EntryLoaded) -> None:
        self.detail = detail = message.value
        self.query_one("#entry-head", Static).update(_head(detail.entry))
        self.query_one("#entry-text", Static).update(Text(detail.entry.entry.text))
        self.query_one("#entry-meta", Static).update(_meta(detail.entry))
        self._fill_history(detail.history.events)

    def _fill_history(self, events: tuple[HistoryEvent, ...]) -> None:
        table = self.query_one(DataTable)
        width = flex_width(HISTORY_COLUMNS, table.size.width)
        rows = [(str(index), _history_row(event, width)) for index, event in enumerate(events)]
        fill_table(table, HISTORY_COLUMNS, rows, table.size.width)
        table.move_cursor(row=len(events) - 1)
        table.focus()
        self._show_change(len(events) - 1)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self.detail is not None and event.row_key.value is not None:
            self._show_change(int(event.row_key.value))

    def _show_change(self, index: int) -> None:
        if self.detail is not None and index >= 0:
            self.query_one("#diff", Static).update(describe_event(self.detail.history.events, index))

    def action_copy_citation(self) -> None:
        if self.detail is not None:
            self.app.copy_to_clipboard(str(self.detail.entry.citation))
            self.status.info("citation copied to the clipboard")


def _history_row(event: HistoryEvent, width: int) -> tuple[object, ...]:
    return (f"r{event.revision}", event.operation, state_text(event.state), f"v{event.entry.version}",
            when(event.created_at), preview(event.entry.text, width))


def _head(entry: MemoryEntry) -> Text:
    version = entry.entry
    return Text.assemble((version.entry_id, "bold"), f"  {version.kind} · v{version.version} · ",
                         state_text(entry.state), f" · as of revision {entry.citation.revision}")


def _meta(entry: MemoryEntry) -> Text:
    version = entry.entry
    meta = Text()
    meta.append("metadata  ", style="dim").append(json.dumps(version.metadata, ensure_ascii=False) + "\n")
    meta.append("written   ", style="dim").append(f"{when(version.created_at)} UTC in revision "
                                                  f"{version.created_in_revision} · sha256 {version.content_hash[:12]}\n")
    meta.append("citation\n", style="dim").append(str(entry.citation), style="cyan")
    return meta
