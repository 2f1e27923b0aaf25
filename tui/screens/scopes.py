"""The first screen: every scope with its entry counts, head revision and last change."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Static

from pcmem import ScopeSummary
from pcmem_tui.format import count, plain, when
from pcmem_tui.messages import ScopesLoaded, Written
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.dialogs import Draft, RememberScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.widgets import StatusLine, fill_table, key_footer, selected_key

COLUMNS = (("scope", None), ("active", 7), ("retired", 7), ("head", 5), ("last change (UTC)", 19))
EMPTY_HINT = "No scopes yet: press n to remember something, or run `pcmem demo` to seed a sample."


class ScopesScreen(StoreScreen):
    BINDINGS = [
        Binding("enter", "open", "Open"),
        Binding("slash", "search", "Search"),
        Binding("n", "remember", "Remember"),
        Binding("r", "refresh", "Refresh"),
        Binding("q", "app.quit", "Quit"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="title", classes="title")
        yield DataTable(id="scopes", cursor_type="row", zebra_stripes=True)
        yield StatusLine()
        yield key_footer()

    def on_mount(self) -> None:
        self.sub_title = "scopes"

    def on_screen_resume(self) -> None:
        self.load()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "back"  # the root screen has nowhere to go back to

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        self.deliver(self.session.scopes, ScopesLoaded)

    def on_scopes_loaded(self, message: ScopesLoaded) -> None:
        scopes: list[ScopeSummary] = message.value
        table = self.query_one(DataTable)
        fill_table(table, COLUMNS, [(s.scope, _row(s)) for s in scopes], table.size.width)
        title = count(len(scopes), "scope") if scopes else EMPTY_HINT
        self.query_one("#title", Static).update(Text(title))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _scope(self) -> str | None:
        return selected_key(self.query_one(DataTable))

    def action_open(self) -> None:
        if scope := self._scope():
            self.app.push_screen(EntriesScreen(scope))

    def action_search(self) -> None:
        if scope := self._scope():
            self.app.push_screen(SearchScreen(scope))

    def action_refresh(self) -> None:
        self.load()

    def action_remember(self) -> None:
        self.app.push_screen(RememberScreen(scope=None), self._remember)

    def _remember(self, draft: Draft | None) -> None:
        if draft is not None:
            self.write_entry(draft)

    @work(thread=True, exclusive=True, group="write")
    def write_entry(self, draft: Draft) -> None:
        self.deliver(lambda: ("remembered", self.session.remember(draft.scope, draft.entry, None)), Written)

    def on_written(self, message: Written) -> None:
        verb, result = message.value
        self.status.info(f"{verb} in {result.memory.scope!r} → revision {result.memory.revision}")
        self.load()


def _row(summary: ScopeSummary) -> tuple[object, ...]:
    return (plain(summary.scope, "bold"), summary.active_count, summary.retired_count,
            summary.head_revision, when(summary.updated_at))
