"""The first screen: every scope with its entry counts, head revision and last change."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Static

from pcmem import ScopeSummary
from pcmem_tui.format import count, count_cell, plain, when
from pcmem_tui.messages import RecentLoaded, ScopesLoaded
from pcmem_tui.screens.base import StoreScreen, refuse_read_only
from pcmem_tui.screens.dialogs import Outcome, RememberScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.forget import ForgetScopeScreen
from pcmem_tui.screens.recent import show_recent
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.table import Cell, ListTable
from pcmem_tui.widgets import StatusLine, StoreBar, WorkProgress, key_footer

COLUMNS = (("scope", None), ("active", 7), ("retired", 7), ("head", 5), ("last change (UTC)", 19))
#: ``s`` cycles through these (``<`` back): by name, the biggest first, the latest change first.
SORTS = {
    "name": lambda s: (s.scope,),
    "entries": lambda s: (-(s.active_count + s.retired_count), s.scope),
    "last change": lambda s: (-s.updated_at.timestamp(), s.scope),
}
EMPTY_HINT = "No scopes yet: press n to remember something, or run `pcmem demo` to seed a sample."


class ScopesScreen(StoreScreen):
    BINDINGS = [
        Binding("enter", "open", "Open"),
        Binding("S", "search", "Search"),  # / filters the list, as on every list
        Binding("n", "remember", "Remember"),
        Binding("r", "refresh", "Refresh"),
        Binding("x", "forget", "Forget…", show=False),
        Binding("s,greater_than_sign", "sort(1)", "Sort", show=False),
        Binding("less_than_sign", "sort(-1)", "Sort back", show=False),
        Binding("w", "recent", "Who changed what, just now", show=False),
        Binding("q", "app.quit", "Quit"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="title", classes="title")
        yield ListTable(COLUMNS, _row, lambda summary: summary.scope, zebra_stripes=True, id="scopes")
        yield WorkProgress()
        yield StatusLine()
        yield StoreBar()
        yield key_footer()

    scopes: list[ScopeSummary] = []
    follow: str | None = None  # a scope the cursor should land on after the next load
    sort = "name"

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
        self.scopes = message.value
        self.fill()
        title = Text(count(len(self.scopes), "scope") if self.scopes else EMPTY_HINT)
        if not self.session.created:
            title = Text(missing_store(self.session.path), style="bold yellow")
        self.query_one("#title", Static).update(title)

    def fill(self) -> None:
        ordered = sorted(self.scopes, key=SORTS[self.sort])
        self.query_one(ListTable).set_rows([(s.scope, s) for s in ordered], keep=self.follow)
        self.follow = None

    def action_sort(self, step: int = 1) -> None:
        names = list(SORTS)
        self.sort = names[(names.index(self.sort) + step) % len(names)]
        self.fill()
        self.status.info(f"scopes by {self.sort} (s or >: next order, <: the one before)")

    def on_list_table_row_selected(self, event: ListTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _scope(self) -> str | None:
        return self.query_one(ListTable).cursor_key

    def action_open(self) -> None:
        if scope := self._scope():
            self.app.push_screen(EntriesScreen(scope))

    def action_search(self) -> None:
        if scope := self._scope():
            self.app.push_screen(SearchScreen(scope))

    def action_refresh(self) -> None:
        self.load()

    def action_remember(self) -> None:
        """A new entry in the scope under the cursor (the scope field is filled in: another one can be typed)."""
        if not refuse_read_only(self):
            self.app.push_screen(RememberScreen(self.session, scope=None, suggested=self._scope()), self._written)

    def action_forget(self) -> None:
        scope = self._scope()
        summary = next((s for s in self.scopes if s.scope == scope), None)
        if summary is not None:
            self.app.push_screen(ForgetScopeScreen(self.session, summary), self._written)

    def _written(self, outcome: Outcome | None) -> None:
        if outcome is not None:
            memory = outcome.result.memory
            self.status.info(f"{outcome.verb} in {memory.scope!r} → revision {memory.revision}")
            self.follow = memory.scope  # closing the dialog resumes this screen, which reloads it

    def refresh_from_store(self) -> None:
        self.load()

    def action_recent(self) -> None:
        self.load_recent()

    @work(thread=True, exclusive=True, group="recent")
    def load_recent(self) -> None:
        self.deliver(self.session.recent, RecentLoaded)

    def on_recent_loaded(self, message: RecentLoaded) -> None:
        show_recent(self, "the scopes changed last", message.value)


def missing_store(path: Path | None) -> str:
    """A ``--db`` path with no store: said apart from an empty store, and louder when its folder is missing too
    (a typo, most likely); nothing is created until the first write."""
    said = f"No store at {path} yet: press n to remember something, which creates it."
    folder = path.parent if path is not None else None
    if folder is not None and not folder.exists():
        said += f" Its folder {folder} does not exist either: is the path right?"
    return said


def _row(summary: ScopeSummary) -> tuple[Cell, ...]:
    return (plain(summary.scope, "bold"), count_cell(summary.active_count), count_cell(summary.retired_count),
            count_cell(summary.head_revision), when(summary.updated_at))
