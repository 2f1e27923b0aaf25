"""One scope's entries at its head or at any past revision, with retire / reactivate / remember at the head."""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Static

from pcmem import MemoryEntry, RevisionInfo, WriteResult
from pcmem_tui.format import plain, preview, state_text
from pcmem_tui.messages import ManifestLoaded, RevisionsLoaded, Written
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.dialogs import ConfirmScreen, Draft, RememberScreen, RevisionScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.session import Manifest
from pcmem_tui.widgets import ColumnSpec, StatusLine, fill_table, flex_width, key_footer, selected_key

MAX_ID_WIDTH = 24  # longer ids (generated ones are 30) are cut in the list; the entry screen shows them whole
STEP = Binding.Group("Older/newer")


def _columns(entries: tuple[MemoryEntry, ...]) -> tuple[ColumnSpec, ...]:
    id_width = min(max((cell_len(e.entry.entry_id) for e in entries), default=5), MAX_ID_WIDTH)
    return ("entry", max(id_width, 5)), ("kind", 10), ("ver", 3), ("state", 7), ("text", None)


class EntriesScreen(StoreScreen):
    BINDINGS = [
        Binding("enter", "open", "Open"),
        Binding("slash", "search", "Search"),
        Binding("v", "pick_revision", "Revision…"),
        Binding("left_square_bracket", "step(-1)", "Older", group=STEP),
        Binding("right_square_bracket", "step(1)", "Newer", group=STEP),
        Binding("h", "head", "Head"),
        Binding("a", "toggle_retired", "Retired"),
        Binding("n", "remember", "Remember"),
        Binding("d", "retire", "Retire"),
        Binding("u", "reactivate", "Reactivate", show=False),
        Binding("r", "refresh", "Refresh", show=False),
    ]

    def __init__(self, scope: str, revision: int | None = None) -> None:
        super().__init__()
        self.scope = scope
        self.revision = revision  # None: follow the head
        self.include_retired = True
        self.manifest: Manifest | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="title", classes="title")
        yield DataTable(id="entries", cursor_type="row", zebra_stripes=True)
        yield StatusLine()
        yield key_footer()

    def on_screen_resume(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        call = lambda: self.session.manifest(self.scope, self.revision, self.include_retired)  # noqa: E731
        self.deliver(call, ManifestLoaded)

    def on_manifest_loaded(self, message: ManifestLoaded) -> None:
        self.manifest = manifest = message.value
        table, entries = self.query_one(DataTable), manifest.page.entries
        columns = _columns(entries)
        id_width, width = columns[0][1] or 0, flex_width(columns, table.size.width)
        fill_table(table, columns, [(e.entry.entry_id, _row(e, id_width, width)) for e in entries], table.size.width)
        self.query_one("#title", Static).update(_title(self.scope, manifest, self.include_retired))
        self.set_class(not manifest.is_head, "past")
        self.sub_title = f"{self.scope} @ r{manifest.revision}"
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Writes only at the head; stepping only where there is somewhere to step to."""
        manifest = self.manifest
        if manifest is None:
            return action not in ("remember", "retire", "reactivate", "step", "head")
        if action in ("remember", "retire", "reactivate"):
            return manifest.is_head
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
        self.app.push_screen(SearchScreen(self.scope))

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

    def action_remember(self) -> None:
        self.app.push_screen(RememberScreen(self.scope), self._remember)

    def _remember(self, draft: Draft | None) -> None:
        if draft is not None and self.manifest is not None:
            head = self.manifest.head
            self.write(lambda: ("remembered 1 entry", self.session.remember(self.scope, draft.entry, head)))

    def action_retire(self) -> None:
        self._change_state("retire", "Retire", "It stays readable in past revisions and in its history.")

    def action_reactivate(self) -> None:
        self._change_state("reactivate", "Reactivate", "It becomes active again at the version it had.")

    def _change_state(self, operation: str, verb: str, note: str) -> None:
        entry_id, manifest = self._entry_id(), self.manifest
        if entry_id is None or manifest is None:
            return
        call = getattr(self.session, operation)
        head = manifest.head

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.write(lambda: (f"{operation}d {entry_id!r}", call(self.scope, entry_id, head)))

        question = f"{verb} entry {entry_id!r} in {self.scope!r} (revision {head})?\n{note}"
        self.app.push_screen(ConfirmScreen(question, yes=verb), confirmed)

    @work(thread=True, exclusive=True, group="write")
    def write(self, call: Callable[[], tuple[str, WriteResult]]) -> None:
        self.deliver(call, Written)

    def on_written(self, message: Written) -> None:
        verb, result = message.value
        self.status.info(f"{verb} → revision {result.memory.revision}")
        self.revision = None
        self.load()


def _row(entry: MemoryEntry, id_width: int, width: int) -> tuple[object, ...]:
    version = entry.entry
    dim = "dim" if entry.state == "retired" else ""
    return (preview(version.entry_id, id_width, dim), plain(version.kind, dim), f"v{version.version}",
            state_text(entry.state), preview(version.text, width, dim))


def _title(scope: str, manifest: Manifest, include_retired: bool) -> Text:
    entries = manifest.page.entries
    retired = sum(1 for e in entries if e.state == "retired")
    title = Text.assemble((scope, "bold"), f" · revision {manifest.revision} of {manifest.head}",
                          f" · {len(entries) - retired} active")
    title.append(f", {retired} retired" if include_retired else " (retired hidden)")
    if not manifest.is_head:
        title.append("  ◷ past · read-only", style="bold yellow")
    return title
