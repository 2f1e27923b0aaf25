"""One scope's entries at its head or at any past revision, with retire / reactivate / remember at the head."""

from __future__ import annotations

import threading

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Static
from textual.worker import get_current_worker

from pcmem import MemoryEntry, RevisionInfo
from pcmem_tui import garbage
from pcmem_tui.format import one_line, plain, state_text
from pcmem_tui.messages import ManifestLoaded, RecentLoaded, RevisionsLoaded, WorkFailed
from pcmem_tui.ordering import OrderedEntries
from pcmem_tui.recent import JustChanged
from pcmem_tui.screens.base import StoreScreen, refuse_read_only
from pcmem_tui.screens.dialogs import ConfirmScreen, Outcome, RememberScreen, confirm_question
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.forget import ForgetEntryScreen
from pcmem_tui.screens.recent import show_recent
from pcmem_tui.screens.revisions import RevisionScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.session import Manifest
from pcmem_tui.table import ColumnSpec, ListTable
from pcmem_tui.widgets import StatusLine, StoreBar, WorkProgress, key_footer, short_id

Columns = tuple[ColumnSpec, ...]
#: Text first (it is what tells entries apart), then the short id that shows an id's distinguishing part.
COLUMNS: Columns = (("text", None), ("kind", 8), ("ver", 3), ("state", 7), ("id", 12))
#: Below 100 columns the state is a mark (● active, ○ retired: retired rows are dim as well) and the id shorter, so
#: at 80 columns the text gets 48 cells instead of 40, more than half the row.
NARROW_COLUMNS: Columns = (("text", None), ("kind", 8), ("ver", 3), ("st", 2), ("id", 9))
NARROW_BELOW = 100
STATE_MARKS = {"active": "●", "retired": "○"}


def columns_for(room: int) -> Columns:
    return NARROW_COLUMNS if room < NARROW_BELOW else COLUMNS


#: ``s`` cycles through these; creation order first (the order the entries were remembered in).
SORTS = {
    "created": lambda e, created: (created.get(e.entry.entry_id, e.entry.created_in_revision), e.entry.entry_id),
    "changed": lambda e, created: (-e.entry.created_in_revision, e.entry.entry_id),
    "text": lambda e, created: (e.entry.text.casefold(), e.entry.entry_id),
    "kind": lambda e, created: (e.entry.kind, created.get(e.entry.entry_id, 0), e.entry.entry_id),
    "id": lambda e, created: (e.entry.entry_id,),
}


#: The actions :meth:`EntriesScreen.check_action` enables from the manifest (where it is, what it may step to).
MANIFEST_KEYS = (("step", (-1,)), ("step", (1,)), ("head", ()), ("remember", ()), ("retire", ()))
#: The writes a past revision does not offer.
WRITES = ("remember", "retire", "reactivate")


class EntriesScreen(StoreScreen):
    BINDINGS = [
        Binding("enter", "open", "Open"),
        # / filters the list (every list's key); search is S ("/" searched before lists had a filter)
        Binding("S", "search", "Search"),
        Binding("v", "pick_revision", "Revision…"),
        # Separate bindings (not a Binding.Group): the compact footer rendered the group as "[ ] Older/newerh Head".
        Binding("left_square_bracket", "step(-1)", "Older"),
        Binding("right_square_bracket", "step(1)", "Newer", show=False),
        Binding("h", "head", "Head"),
        Binding("a", "toggle_retired", "Retired"),
        Binding("n", "remember", "New"),
        Binding("d", "retire", "Retire"),
        Binding("u", "reactivate", "Reactivate", show=False),
        # a past revision is read-only: its footer offers no write, and a write key says why (instead of nothing)
        Binding("n", "why_read_only('remember')", "Why read-only", show=False),
        Binding("d", "why_read_only('retire')", "Why read-only", show=False),
        Binding("u", "why_read_only('reactivate')", "Why read-only", show=False),
        Binding("x", "forget", "Forget…", show=False),
        Binding("y,c", "copy_citation", "Copy citation", show=False),
        Binding("f,slash", "filter", "Filter", show=False),
        Binding("s,greater_than_sign", "sort(1)", "Sort", show=False),
        Binding("less_than_sign", "sort(-1)", "Sort back", show=False),
        Binding("r", "refresh", "Refresh", show=False),
        Binding("w", "recent", "Who changed what, just now", show=False),
    ]

    def __init__(self, scope: str, revision: int | None = None) -> None:
        super().__init__()
        self.scope = scope
        self.revision = revision  # None: follow the head
        self.include_retired = True
        self.manifest: Manifest | None = None
        self.sort = "created"
        self.follow: str | None = None  # an entry id the cursor should land on after the next load (a new entry)
        self.columns = COLUMNS  # the table's columns: NARROW_COLUMNS below 100 cells (see _fit_columns)
        self._cells: dict[tuple[str, str, Columns, bool], tuple[Text, ...]] = {}
        #: Rows another process changed moments ago (marked ✱ until they fade).
        self.just_changed = JustChanged()
        self._outside = False  # the load under way follows another process's write

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="title", classes="title")
        yield ListTable(COLUMNS, self._cells_of, _words, zebra_stripes=True, id="entries")
        yield WorkProgress()
        yield StatusLine()
        yield StoreBar()
        yield key_footer()

    #: Cells made for entry versions, kept for a few screens' worth of rows: the rows of a first page are drawn
    #: again when the rest of the scope comes, and a moving cursor draws its rows again.
    CELLS_KEPT = 1024

    def _cells_of(self, entry: MemoryEntry) -> tuple[Text, ...]:
        fresh = bool(self.just_changed) and entry.entry.entry_id in self.just_changed and \
            self.manifest is not None and self.manifest.is_head  # marks say "just now": at the head only
        key = (entry.entry.entry_version_id, entry.state, self.columns, fresh)
        cells = self._cells.get(key)
        if cells is None:
            if len(self._cells) >= self.CELLS_KEPT:
                self._cells.clear()
            cells = self._cells[key] = _row(entry, self.columns, fresh)
        return cells

    def on_screen_resume(self) -> None:
        self.load(first_page=self.manifest is None)

    #: How long the rest of a big scope waits for its first page to be drawn (a screen that went away never says).
    FIRST_PAGE_DRAWN_WITHIN = 2.0

    @work(thread=True, exclusive=True)
    def load(self, first_page: bool = False) -> None:
        """The manifest. ``first_page``: when the screen has no rows of the revision to show yet (the first open,
        a step), a big scope read whole shows its first page before the rest is read; a reload of what is on screen
        (an outside write, a return) keeps the rows until the whole manifest is there. The rest waits until the page
        is drawn: building 10,000 entries holds the GIL most of the time, and drawing beside it took three times as
        long."""
        worker = get_current_worker()

        def show_first_page(manifest: Manifest) -> None:
            if not worker.is_cancelled:
                drawn = threading.Event()
                self.post_message(ManifestLoaded(manifest, drawn))
                drawn.wait(self.FIRST_PAGE_DRAWN_WITHIN)

        call = lambda: self.session.manifest(self.scope, self.revision,  # noqa: E731
                                             show_first_page if first_page else None)
        self.deliver(call, ManifestLoaded)

    def on_manifest_loaded(self, message: ManifestLoaded) -> None:
        unchanged = self.manifest is not None and message.value.entries is self.manifest.entries
        self.manifest = manifest = message.value
        outside, self._outside = self._outside, False
        if not unchanged:  # a return from an entry, or a look that found nothing new: the rows stand
            self.fill()
            if outside and self._ordered is not None:
                self._mark_changed([entry.entry.entry_id for entry in self._ordered.changed])
            if self._ordered is not None and self._ordered.sorted_all and manifest.complete:  # read whole: after
                self.call_after_refresh(garbage.settle_after_whole_read, len(manifest.entries))  # the rows are painted
        if manifest.complete and manifest.is_head:  # its search indexes, for the first search, once nothing waits
            self.pcmem_app.warm_scope(self.scope)
        if message.drawn is not None:
            self.call_after_refresh(message.drawn.set)
        self._show_title()
        self.set_class(not manifest.is_head, "past")
        # the header names a past revision only: at the head the title line counts revisions, and a header that
        # changed with each outside write laid the whole screen out again each time
        self.sub_title = self.scope if manifest.is_head else f"{self.scope} @ r{manifest.revision}"
        self._refresh_keys()

    #: Which of the keys that depend on the manifest were enabled when the footer was last drawn.
    _keys_shown: tuple[bool | None, ...] | None = None

    def _refresh_keys(self) -> None:
        """Redraw the footer only when a key became enabled or disabled. Textual's footer rebuilds all its widgets
        on each ``refresh_bindings`` (a layout of the screen), and every outside write reloads the manifest: at
        10,000 entries with an agent writing, that rebuild was much of what made ``j`` wait."""
        keys = tuple(self.check_action(action, parameters) for action, parameters in MANIFEST_KEYS)
        if keys != self._keys_shown:
            self._keys_shown = keys
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
        """(Re)draw the rows from the loaded manifest: on load, sort and reload. The table keeps the entries as they
        are and makes cells only for the rows on screen; the order follows a reload by the entries it changed
        (:mod:`pcmem_tui.ordering`), so an agent's write to a 10,000-entry scope moves a row, not a sort of all."""
        if self.manifest is None:
            return
        order = (self.sort, self.include_retired)
        if self._ordered is None or self._ordered_by != order:
            self._ordered, self._ordered_by = OrderedEntries(self._sort_key, self._listed), order
            self._ordered.rebuild(self.manifest.entries)
        else:
            self._ordered.update(self.manifest.entries)
        table = self.query_one(ListTable)
        keep = self.follow or table.cursor_key
        table.set_rows([(e.entry.entry_id, e) for e in self._ordered.entries], keep=keep)
        # a first page may not hold the entry under the cursor: the cursor goes back to it when the rest is there
        self.follow = keep if not self.manifest.complete and table.cursor_key != keep else None

    #: The rows in order, and the (sort, include_retired) they were ordered by.
    _ordered: OrderedEntries | None = None
    _ordered_by: tuple[str, bool] | None = None

    def _sort_key(self, entry: MemoryEntry) -> tuple[object, ...]:
        return SORTS[self.sort](entry, self.manifest.created if self.manifest else {})

    def _listed(self, entry: MemoryEntry) -> bool:
        return self.include_retired or entry.state != "retired"

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_columns)  # after layout: the table's new width is known then

    def _fit_columns(self) -> None:
        """The narrow columns below 100 cells, the wide ones from there: only the column specs change (the rows'
        cells are made when they are drawn, from :attr:`columns`)."""
        table = self.query_one(ListTable)
        columns = columns_for(table.size.width)
        if columns != self.columns:
            self.columns = columns
            table.set_columns(columns)

    def _show_title(self) -> None:
        """The title changes with every outside write (revision, counts); the screen is laid out again only when
        it needs another number of lines."""
        if self.manifest is None:
            return
        title = _title(self.scope, self.manifest, self.include_retired, self.sort)
        box = self.query_one("#title", Static)
        lines = len(title.wrap(self.app.console, max(box.content_region.width, 1)))
        box.update(title, layout=lines != box.content_region.height)

    def action_filter(self) -> None:
        self.query_one(ListTable).action_prompt("filter")

    def action_sort(self, step: int = 1) -> None:
        names = list(SORTS)
        self.sort = names[(names.index(self.sort) + step) % len(names)]
        self.fill()
        self._show_title()
        self.status.info(f"sorted by {self.sort} (s or >: next order, <: the one before)")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stepping only where there is somewhere to step to; writes only at the head (pressed in a past
        revision, their keys say why instead)."""
        manifest = self.manifest
        if manifest is None:
            return action not in (*WRITES, "why_read_only", "step", "head")
        if action == "step":
            target = manifest.revision + int(parameters[0])  # type: ignore[call-overload]
            return 1 <= target <= manifest.head
        if action == "head":
            return not manifest.is_head
        if action in WRITES:
            return manifest.is_head
        if action == "why_read_only":
            return not manifest.is_head
        return True

    def action_why_read_only(self, verb: str) -> None:
        self._refuse_in_the_past(verb)

    def action_copy_citation(self) -> None:
        if (entry := self._selected()) is not None:
            self.copy_citation(entry.citation)

    def on_list_table_row_selected(self, event: ListTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _entry_id(self) -> str | None:
        return self.query_one(ListTable).cursor_key

    def action_open(self) -> None:
        if (entry_id := self._entry_id()) and self.manifest:
            self.app.push_screen(EntryScreen(self.scope, entry_id, self.manifest.revision,
                                             past=not self.manifest.is_head))

    def action_search(self) -> None:
        note = None
        if self.manifest is not None and not self.manifest.is_head:
            note = (f"search reads the head (r{self.manifest.head}), not the past revision r{self.manifest.revision} "
                    "shown here")
        self.app.push_screen(SearchScreen(self.scope, note=note))

    def action_refresh(self) -> None:
        self.load()

    def action_toggle_retired(self) -> None:
        """The manifest holds the retired entries too: hiding them needs no store call."""
        self.include_retired = not self.include_retired
        self.fill()
        self._show_title()

    def _show_revision(self, revision: int | None) -> None:
        self.revision = revision
        self.load(first_page=True)

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
        if not self._refuse_in_the_past("remember") and not refuse_read_only(self):
            self.app.push_screen(RememberScreen(self.session, self.scope), self._written)

    def action_retire(self) -> None:
        self._change_state("retire", "It stays readable in past revisions and in its history.")

    def action_reactivate(self) -> None:
        self._change_state("reactivate", "It becomes active again at the version it had.")

    def _selected(self) -> MemoryEntry | None:
        entry_id = self._entry_id()
        entries = self.manifest.entries if self.manifest else ()
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
        """Another writer moved a scope: reload in place (the cursor stays on its entry); the rows it changed are
        marked for a moment."""
        self._outside = True
        self.load()

    def _mark_changed(self, entry_ids: list[str]) -> None:
        own = self.session.own_writes(self.scope)
        if self.just_changed.mark(entry_id for entry_id in entry_ids if entry_id not in own):
            self.query_one(ListTable).redraw_rows()
            self.set_timer(JustChanged.SHOWN_FOR + 0.1, self._fade)

    def _fade(self) -> None:
        self.just_changed.fade()
        self.query_one(ListTable).redraw_rows()

    def action_recent(self) -> None:
        self.load_recent()

    @work(thread=True, exclusive=True, group="recent")
    def load_recent(self) -> None:
        self.deliver(lambda: self.session.recent([self.scope]), RecentLoaded)

    def on_recent_loaded(self, message: RecentLoaded) -> None:
        show_recent(self, repr(self.scope), message.value)


def _row(entry: MemoryEntry, columns: Columns = COLUMNS, fresh: bool = False) -> tuple[Text, ...]:
    """The cells of one entry's row (made only while the row is on screen; the table cuts them to width). A narrow
    state column shows the state's mark, a narrow id column a shorter id. ``fresh``: another process changed it a
    moment ago (a ✱ before its text)."""
    version = entry.entry
    dim = "dim" if entry.state == "retired" else ""
    (_, state_width), (_, id_width) = columns[3], columns[4]
    state = state_text(entry.state)
    if (state_width or 0) < len(entry.state):
        state.plain = STATE_MARKS.get(entry.state, entry.state[:1])
    text = one_line(version.text, dim)
    if fresh:
        text = Text.assemble(("✱ ", "bold yellow"), text)
    return (text, plain(version.kind, dim), plain(f"v{version.version}"), state,
            plain(short_id(version.entry_id, id_width or 12), "dim" if dim else "cyan"))


def _words(entry: MemoryEntry) -> str:
    """What the filter looks in: the text, the whole id (not only its short form) and the kind."""
    return f"{entry.entry.text} {entry.entry.entry_id} {entry.entry.kind}"


def _title(scope: str, manifest: Manifest, include_retired: bool, sort: str) -> Text:
    entries = manifest.entries
    retired = sum(1 for e in entries if e.state == "retired")
    title = Text.assemble((scope, "bold"), f" · revision {manifest.revision} of {manifest.head}")
    if manifest.complete:
        title.append(f" · {len(entries) - retired} active")
        title.append(f", {retired} retired" if include_retired else " (retired hidden)")
    else:  # the first page of a big scope: its counts would be the page's
        title.append(f" · first {len(entries)} entries, reading the rest…", style="italic")
    if sort != "created":  # the default order goes unsaid: 80 columns are tight
        title.append(f" · by {sort}", style="dim")
    if not manifest.is_head:
        title.append("  ◷ past · read-only", style="bold yellow")
    return title
