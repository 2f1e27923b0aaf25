"""One scope's entries at its head or at any past revision, with retire / reactivate / remember at the head."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, Static

from pcmem import MemoryEntry, RevisionInfo
from pcmem_tui.format import plain, preview, state_text
from pcmem_tui.messages import ManifestLoaded, RevisionsLoaded, WorkFailed
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.dialogs import ConfirmScreen, Outcome, RememberScreen, RevisionScreen, confirm_question
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.forget import ForgetEntryScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.session import Manifest
from pcmem_tui.widgets import (
    FilterBar,
    StatusLine,
    StoreBar,
    Table,
    WorkProgress,
    fill_table,
    flex_width,
    key_footer,
    matches,
    selected_key,
    short_id,
)

#: Text first (it is what tells entries apart), then the short id that shows an id's distinguishing part.
COLUMNS = (("text", None), ("kind", 8), ("ver", 3), ("state", 7), ("id", 12))
#: Below 100 columns the state is a mark (● active, ○ retired: retired rows are dim as well) and the id shorter, so
#: at 80 columns the text gets 46 cells instead of 38, more than half the row.
NARROW_COLUMNS = (("text", None), ("kind", 8), ("ver", 3), ("state", 2), ("id", 9))
NARROW_BELOW = 100
STATE_MARKS = {"active": "●", "retired": "○"}


def columns_for(room: int) -> tuple[tuple[str, int | None], ...]:
    return NARROW_COLUMNS if room < NARROW_BELOW else COLUMNS
#: ``s`` cycles through these; creation order first (the order the entries were remembered in).
SORTS = {
    "created": lambda e, created: (created.get(e.entry.entry_id, e.entry.created_in_revision), e.entry.entry_id),
    "changed": lambda e, created: (-e.entry.created_in_revision, e.entry.entry_id),
    "text": lambda e, created: (e.entry.text.casefold(), e.entry.entry_id),
    "kind": lambda e, created: (e.entry.kind, created.get(e.entry.entry_id, 0), e.entry.entry_id),
    "id": lambda e, created: (e.entry.entry_id,),
}


class EntriesScreen(StoreScreen):
    BINDINGS = [
        Binding("enter", "open", "Open"),
        Binding("slash", "search", "Search"),
        Binding("v", "pick_revision", "Revision…"),
        # Separate bindings (not a Binding.Group): the compact footer rendered the group as "[ ] Older/newerh Head".
        Binding("left_square_bracket", "step(-1)", "Older"),
        Binding("right_square_bracket", "step(1)", "Newer", show=False),
        Binding("h", "head", "Head"),
        Binding("a", "toggle_retired", "Retired"),
        Binding("n", "remember", "New"),
        Binding("d", "retire", "Retire"),
        Binding("u", "reactivate", "Reactivate", show=False),
        Binding("x", "forget", "Forget…", show=False),
        Binding("f", "filter", "Filter", show=False),
        Binding("s", "sort", "Sort", show=False),
        Binding("r", "refresh", "Refresh", show=False),
    ]

    def __init__(self, scope: str, revision: int | None = None) -> None:
        super().__init__()
        self.scope = scope
        self.revision = revision  # None: follow the head
        self.include_retired = True
        self.manifest: Manifest | None = None
        self.sort = "created"
        self.follow: str | None = None  # an entry id the cursor should land on after the next load (a new entry)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="title", classes="title")
        yield Table(id="entries", zebra_stripes=True)
        yield FilterBar()
        yield WorkProgress()
        yield StatusLine()
        yield StoreBar()
        yield key_footer()

    def on_screen_resume(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        call = lambda: self.session.manifest(self.scope, self.revision, self.include_retired)  # noqa: E731
        self.deliver(call, ManifestLoaded)

    def on_manifest_loaded(self, message: ManifestLoaded) -> None:
        self.manifest = manifest = message.value
        self.fill()
        self.query_one("#title", Static).update(_title(self.scope, manifest, self.include_retired, self.sort))
        self.set_class(not manifest.is_head, "past")
        self.sub_title = f"{self.scope} @ r{manifest.revision}"
        self.refresh_bindings()

    def on_work_failed(self, message: WorkFailed) -> None:
        """(StoreScreen's handler runs too.) A failed reload keeps the rows read before, labelled as such."""
        if not self.session.freshness.stale:
            return
        title = _title(self.scope, self.manifest, self.include_retired, self.sort) if self.manifest else Text(
            self.scope, style="bold")
        read = self.session.freshness.read_at
        title.append(f"  ⚠ stale: {f'as read at {read:%H:%M:%S}' if self.manifest and read else 'not read yet'}",
                     style="bold yellow")
        self.query_one("#title", Static).update(title)

    def fill(self) -> None:
        """(Re)draw the rows from the loaded manifest at the table's current width: on load, resize, filter, sort.

        A reload that keeps the rows in place (an agent revised, retired or appended entries: the common case while
        it writes) patches the rows that changed and appends the new ones. Rebuilding a DataTable measures every
        cell of every row, which at 3,000 entries took over a second per outside write and made ``j`` lag.
        """
        if self.manifest is None:
            return
        table = self.query_one(DataTable)
        needle = self.query_one(FilterBar).value
        created = self.manifest.created
        entries = sorted(self.manifest.page.entries, key=lambda e: SORTS[self.sort](e, created))
        shown = [e for e in entries if matches(needle, e.entry.text, e.entry.entry_id, e.entry.kind)]
        columns = columns_for(table.size.width)
        width = flex_width(columns, table.size.width)
        drawn = (width, [(e.entry.entry_id, e.entry.entry_version_id, e.state) for e in shown])
        if not _patch(table, self._drawn, drawn, shown, width):
            rows = [(e.entry.entry_id, _row(e, width, columns)) for e in shown]
            fill_table(table, columns, rows, table.size.width)
        self._drawn = drawn
        if self.follow is not None and self.follow in (e.entry.entry_id for e in shown):
            table.move_cursor(row=[e.entry.entry_id for e in shown].index(self.follow), animate=False)
            self.follow = None

    #: What the table shows: the text column's width and (entry id, version id, state) per row, in order.
    _drawn: tuple[int, list[tuple[str, str, str]]] | None = None

    def on_resize(self) -> None:
        self.call_after_refresh(self.fill)  # after layout: the table's new width is known then

    @on(Input.Changed, "#filter")
    def _filter_changed(self) -> None:
        self.fill()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one(DataTable).focus()

    def action_filter(self) -> None:
        bar = self.query_one(FilterBar)
        bar.display = True
        bar.focus()

    def action_sort(self) -> None:
        names = list(SORTS)
        self.sort = names[(names.index(self.sort) + 1) % len(names)]
        self.fill()
        if self.manifest is not None:
            self.query_one("#title", Static).update(_title(self.scope, self.manifest, self.include_retired, self.sort))
        self.status.info(f"sorted by {self.sort} (s: next order)")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stepping only where there is somewhere to step to. Writes stay enabled in a past revision so that
        pressing them says why nothing happens instead of doing nothing."""
        manifest = self.manifest
        if manifest is None:
            return action not in ("remember", "retire", "reactivate", "step", "head")
        if action == "step":
            target = manifest.revision + int(parameters[0])  # type: ignore[call-overload]
            return 1 <= target <= manifest.head
        if action == "head":
            return not manifest.is_head
        return True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _entry_id(self) -> str | None:
        return selected_key(self.query_one(DataTable))

    def action_open(self) -> None:
        if (entry_id := self._entry_id()) and self.manifest:
            self.app.push_screen(EntryScreen(self.scope, entry_id, self.manifest.revision))

    def action_search(self) -> None:
        note = None
        if self.manifest is not None and not self.manifest.is_head:
            note = (f"search reads the head (r{self.manifest.head}), not the past revision r{self.manifest.revision} "
                    "shown here")
        self.app.push_screen(SearchScreen(self.scope, note=note))

    def action_refresh(self) -> None:
        self.load()

    def action_toggle_retired(self) -> None:
        self.include_retired = not self.include_retired
        self.load()

    def _show_revision(self, revision: int | None) -> None:
        self.revision = revision
        self.load()

    def action_step(self, delta: int) -> None:
        if self.manifest is not None:
            target = self.manifest.revision + delta
            self._show_revision(None if target >= self.manifest.head else target)

    def action_head(self) -> None:
        self._show_revision(None)

    # --- picking a revision ---------------------------------------------------------------------------------

    def action_pick_revision(self) -> None:
        self.load_revisions()

    @work(thread=True, exclusive=True, group="revisions")
    def load_revisions(self) -> None:
        self.deliver(lambda: self.session.revisions(self.scope), RevisionsLoaded)

    def on_revisions_loaded(self, message: RevisionsLoaded) -> None:
        revisions: list[RevisionInfo] = message.value
        current = self.manifest.revision if self.manifest else len(revisions)
        self.app.push_screen(RevisionScreen(self.scope, revisions, current), self._picked)

    def _picked(self, revision: int | None) -> None:
        if revision is not None and self.manifest is not None:
            self._show_revision(None if revision == self.manifest.head else revision)

    # --- writes ---------------------------------------------------------------------------------------------

    def _refuse_in_the_past(self, verb: str) -> bool:
        if self.manifest is not None and not self.manifest.is_head:
            self.status.error(f"r{self.manifest.revision} is a past revision and read-only: press h for the head "
                              f"(r{self.manifest.head}) to {verb}")
            return True
        return False

    def action_remember(self) -> None:
        if not self._refuse_in_the_past("remember"):
            self.app.push_screen(RememberScreen(self.session, self.scope), self._written)

    def action_retire(self) -> None:
        self._change_state("retire", "It stays readable in past revisions and in its history.")

    def action_reactivate(self) -> None:
        self._change_state("reactivate", "It becomes active again at the version it had.")

    def _selected(self) -> MemoryEntry | None:
        entry_id = self._entry_id()
        entries = self.manifest.page.entries if self.manifest else ()
        return next((e for e in entries if e.entry.entry_id == entry_id), None)

    def _change_state(self, operation: str, note: str) -> None:
        if self._refuse_in_the_past(operation):
            return
        entry = self._selected()
        if entry is None:
            return
        if (operation == "retire") == (entry.state == "retired"):
            other = "u reactivates it" if entry.state == "retired" else "d retires it"
            self.status.error(f"{entry.entry.entry_id!r} is already {entry.state}: nothing to {operation} ({other})")
            return
        question = confirm_question(operation, entry, self.scope, note)
        self.app.push_screen(ConfirmScreen(self.session, self.scope, entry, operation, question), self._written)

    def action_forget(self) -> None:
        """Forget erases every version in every revision, so a past revision's row can be forgotten too."""
        if (entry := self._selected()) is not None and self.manifest is not None:
            versions = entry.entry.version if self.manifest.is_head else None  # a past row: its version then
            self.app.push_screen(ForgetEntryScreen(self.session, self.scope, entry, versions), self._written)

    def _written(self, outcome: Outcome | None) -> None:
        if outcome is None:
            return
        self.status.info(f"{outcome.verb} → revision {outcome.result.memory.revision}")
        if outcome.result.citations:
            self.follow = outcome.result.citations[0].entry_id
        self.revision = None  # no load() here: closing the dialog resumes this screen, which reloads it once

    def refresh_from_store(self) -> None:
        """Another writer moved a scope: reload in place (the cursor stays on its entry)."""
        self.load()


def _patch(table: DataTable, before: tuple[int, list[tuple[str, str, str]]] | None,
           after: tuple[int, list[tuple[str, str, str]]], entries: list[MemoryEntry], width: int) -> bool:
    """Bring the table from ``before`` to ``after`` by updating changed rows and appending new ones; ``False`` when
    the rows moved, went away or the width changed (the caller rebuilds)."""
    if before is None or before[0] != after[0] or table.row_count != len(before[1]):
        return False
    old, new = before[1], after[1]
    if len(new) < len(old) or any(o[0] != n[0] for o, n in zip(old, new, strict=False)):
        return False
    for index, (was, now) in enumerate(zip(old, new, strict=False)):
        if was != now:
            columns = columns_for(table.size.width)
            for (label, _), cell in zip(columns, _row(entries[index], width, columns), strict=True):
                table.update_cell(now[0], label, cell)
    for entry in entries[len(old):]:
        table.add_row(*_row(entry, width, columns_for(table.size.width)), key=entry.entry.entry_id)
    return True


def _row(entry: MemoryEntry, width: int, columns: tuple[tuple[str, int | None], ...] = COLUMNS) -> tuple[object, ...]:
    """The cells of one entry, each fitted to its column (a narrow state column shows the state's mark)."""
    version = entry.entry
    dim = "dim" if entry.state == "retired" else ""
    widths = dict(columns)
    state = state_text(entry.state)
    if (widths["state"] or 0) < len(entry.state):
        state.plain = STATE_MARKS.get(entry.state, entry.state[:1])
    return (preview(version.text, width, dim), preview(version.kind, 8, dim), f"v{version.version}", state,
            plain(short_id(version.entry_id, widths["id"] or 12), "dim" if dim else "cyan"))


def _title(scope: str, manifest: Manifest, include_retired: bool, sort: str) -> Text:
    entries = manifest.page.entries
    retired = sum(1 for e in entries if e.state == "retired")
    title = Text.assemble((scope, "bold"), f" · revision {manifest.revision} of {manifest.head}",
                          f" · {len(entries) - retired} active")
    title.append(f", {retired} retired" if include_retired else " (retired hidden)")
    if sort != "created":  # the default order goes unsaid: 80 columns are tight
        title.append(f" · by {sort}", style="dim")
    if not manifest.is_head:
        title.append("  ◷ past · read-only", style="bold yellow")
    return title
