"""One entry as it stands in one revision: full text, citation, history, and what each revision changed."""

from __future__ import annotations

import json

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Input, Static

from pcmem import HistoryEvent, MemoryEntry
from pcmem_tui.diff import compare_events, describe_event
from pcmem_tui.editor import EditorError, edit_text
from pcmem_tui.format import citation_text, one_line, state_text, when
from pcmem_tui.messages import EntryLoaded
from pcmem_tui.pager import Pager
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.dialogs import ConfirmScreen, Outcome, ReviseScreen, confirm_question
from pcmem_tui.screens.forget import ForgetEntryScreen
from pcmem_tui.session import EntryDetail
from pcmem_tui.table import Cell, ListTable
from pcmem_tui.widgets import StatusLine, StoreBar, WorkProgress, key_footer

HISTORY_COLUMNS = (("rev", 4), ("operation", 10), ("state", 7), ("ver", 4), ("at (UTC)", 19), ("reason", 16),
                   ("text", None))
#: Below 90 columns: no state column (the operation says it), minutes, and a shorter reason; the text keeps ~20 cells.
NARROW_HISTORY_COLUMNS = (("rev", 4), ("operation", 10), ("ver", 4), ("at (UTC)", 16), ("reason", 10), ("text", None))
NARROW_BELOW = 90


class EntryScreen(StoreScreen):
    BINDINGS = [
        Binding("enter", "open_version", "Open version", show=False),
        Binding("c,y", "copy_citation", "Copy citation"),
        Binding("e", "revise", "Revise"),
        Binding("d", "retire", "Retire", show=False),
        Binding("u", "reactivate", "Reactivate", show=False),
        # not the newest version: the write keys leave the footer, and pressed they say why (the bindings below)
        Binding("e", "why_read_only('revise')", "Why read-only", show=False),
        Binding("d", "why_read_only('retire')", "Why read-only", show=False),
        Binding("u", "why_read_only('reactivate')", "Why read-only", show=False),
        Binding("h", "head", "Newest version"),
        Binding("x", "forget", "Forget…", show=False),
        Binding("t", "focus_text", "Scroll text", show=False),
        Binding("m", "mark", "Mark to compare", show=False),
        Binding("o", "open_in_editor", "Open in $EDITOR", show=False),
    ]

    def __init__(self, scope: str, entry_id: str, revision: int | None = None, *, past: bool = False) -> None:
        """``revision``: the revision the entry is read as of (the head when ``None``); ``past``: the user asked for a
        past version (a history row, a past revision's list), not the present one read at that revision."""
        super().__init__()
        self.scope, self.entry_id, self.revision, self.past = scope, entry_id, revision, past
        self.detail: EntryDetail | None = None
        #: The history row marked with ``m``: the change panel compares it with the row under the cursor.
        self.marked: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="entry-head", classes="title")
        with Pager(id="entry-text-box"):
            yield Static(id="entry-text")
        yield Static(id="entry-meta")
        yield Input(id="citation-field", select_on_focus=True)
        # a list like every other: / filters the versions, : jumps to a row number or the next match
        yield ListTable(HISTORY_COLUMNS, self._history_cells, _history_words, id="history")
        with Pager(id="diff-box"):
            yield Static(id="diff")
        yield WorkProgress()
        yield StatusLine()
        yield StoreBar()
        yield key_footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.scope} › {self.entry_id}"
        self.query_one("#entry-text-box").border_title = "text (t: scroll)"
        self.query_one("#history").border_title = "history (enter: open that version · / filter · : jump)"
        self.query_one("#citation-field").display = False
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        self.deliver(lambda: self.session.entry(self.scope, self.entry_id, self.revision), EntryLoaded)

    def refresh_from_store(self) -> None:
        self.load()

    def on_entry_loaded(self, message: EntryLoaded) -> None:
        self.detail = detail = message.value
        self.query_one("#entry-head", Static).update(_head(detail, self.past))
        self.query_one("#entry-text", Static).update(Text(detail.entry.entry.text))
        self.query_one("#entry-meta", Static).update(_meta(detail.entry, self.size.width - 2))
        self._fill_history(detail.history.events)
        self.refresh_bindings()

    @property
    def is_head(self) -> bool:
        """Whether the version shown is the entry's present one (only then can it be changed). The screen reads the
        entry as of the revision it was opened at, and writes to other entries move the scope's head on: the entry
        is still at its head while no revision since changed *it* (an agent's write elsewhere keeps it editable)."""
        return self.detail is not None and not changed_since(self.detail)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("revise", "retire", "reactivate"):
            return self.detail is None or self.is_head
        if action == "why_read_only":
            return self.detail is not None and not self.is_head
        if action == "head":
            return self.detail is not None and not self.is_head
        return True

    def action_why_read_only(self, verb: str) -> None:
        self._writable(verb)

    def action_head(self) -> None:
        """``h``: the entry's newest version (after somebody else changed it, or from a past version)."""
        self.revision, self.past = None, False
        self.load()

    def _fill_history(self, events: tuple[HistoryEvent, ...]) -> None:
        """The versions, the one shown under the cursor. Rows are keyed by the event's index in the history, which
        stays the key of ``m``, enter and the change panel whatever the filter hides."""
        table = self.query_one("#history", ListTable)
        shown = self.detail.entry.citation.revision if self.detail else None
        current = max((i for i, e in enumerate(events) if shown is None or e.revision <= shown), default=len(events) - 1)
        table.set_rows([(str(index), (index, event)) for index, event in enumerate(events)], keep=str(current))
        table.focus()
        self._show_change(current)

    def _history_cells(self, item: tuple[int, HistoryEvent]) -> tuple[Cell, ...]:
        index, event = item
        return _history_row(event, index == self.marked, narrow=self.narrow)

    narrow = False

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_history)

    def _fit_history(self) -> None:
        table = self.query_one("#history", ListTable)
        narrow = table.size.width < NARROW_BELOW
        if narrow != self.narrow:
            self.narrow = narrow
            table.set_columns(NARROW_HISTORY_COLUMNS if narrow else HISTORY_COLUMNS)

    def _history_index(self) -> int | None:
        """The history event under the cursor (``None`` with no row shown)."""
        key = self.query_one("#history", ListTable).cursor_key
        return int(key) if key is not None else None

    def on_list_table_row_highlighted(self, event: ListTable.RowHighlighted) -> None:
        if self.detail is not None and event.key is not None:
            self._show_change(int(event.key))

    def on_list_table_row_selected(self, event: ListTable.RowSelected) -> None:
        event.stop()
        self.action_open_version()

    def _show_change(self, index: int) -> None:
        if self.detail is None or index < 0:
            return
        events = self.detail.history.events
        box = self.query_one("#diff-box")
        if self.marked is None or self.marked == index or self.marked >= len(events):
            box.border_title = "change"
            self.query_one("#diff", Static).update(describe_event(events, index))
            return
        older, newer = sorted((self.marked, index))
        box.border_title = f"compare ● r{events[self.marked].revision} with r{events[index].revision} (m: unmark)"
        self.query_one("#diff", Static).update(compare_events(events[older], events[newer]))

    def action_mark(self) -> None:
        """``m`` marks the history row under the cursor (again: unmarks it); moving the cursor then compares any
        two versions, not only adjacent ones."""
        index = self._history_index()
        if self.detail is None or index is None:
            return
        self.marked = None if self.marked == index else index
        self.query_one("#history", ListTable).redraw_rows()  # the mark shows in the rev cell
        self._show_change(index)

    def action_open_version(self) -> None:
        index = self._history_index()
        if self.detail is None or index is None:
            return
        event = self.detail.history.events[index]
        if index == shown_index(self.detail):
            self.status.info(f"r{event.revision} is the version shown here")
        elif index == len(self.detail.history.events) - 1:
            self.action_head()  # the newest version is no past one: this screen moves to it
        else:
            self.app.push_screen(EntryScreen(self.scope, self.entry_id, event.revision, past=True))

    @on(Input.Changed, "#citation-field")
    def _keep_citation(self, event: Input.Changed) -> None:
        """The field shows the citation to select; whatever lands in it must not change what it shows."""
        if self.detail is not None and event.value != str(self.detail.entry.citation):
            event.input.value = str(self.detail.entry.citation)

    def action_focus_text(self) -> None:
        self.query_one("#entry-text-box").focus()

    # --- citation ------------------------------------------------------------------------------------------

    def action_copy_citation(self) -> None:
        """OSC 52 cannot report whether the terminal took the text, so say what was sent and offer it selectable."""
        if self.detail is None:
            return
        citation = str(self.detail.entry.citation)
        self.app.copy_to_clipboard(citation)
        field = self.query_one("#citation-field", Input)
        field.value = citation
        field.display = True  # to select with the mouse; the keys stay with the screen (e typed into the field)
        # Said the same way everywhere (configuration is read in one module, and no terminal reports back):
        self.status.info("sent to the terminal as OSC 52, which some terminals ignore (tmux needs "
                         "`set -g set-clipboard on`); the citation is selected in the field above")

    # --- writes --------------------------------------------------------------------------------------------

    def _writable(self, verb: str) -> MemoryEntry | None:
        if self.detail is None:
            return None
        later = changed_since(self.detail)
        if later:
            if self.past:
                self.status.error(f"this is the entry as of revision {self.detail.entry.citation.revision}, a past "
                                  f"version: h shows its newest version, to {verb} it")
            else:
                self.status.error(f"the entry changed since you opened it ({_changes(later)}): h shows its newest "
                                  f"version, to {verb} it")
            return None
        return self.detail.entry

    def action_revise(self) -> None:
        entry = self._writable("revise")
        if entry is not None:
            if entry.state == "retired":
                self.status.error(f"{self.entry_id!r} is retired: u reactivates it before it can be revised")
                return
            self.app.push_screen(ReviseScreen(self.session, self.scope, entry), self._written)

    def action_retire(self) -> None:
        self._change_state("retire", "It stays readable in past revisions and in its history.")

    def action_reactivate(self) -> None:
        self._change_state("reactivate", "It becomes active again at the version it had.")

    def _change_state(self, operation: str, note: str) -> None:
        entry = self._writable(operation)
        if entry is None:
            return
        if (operation == "retire") == (entry.state == "retired"):
            self.status.error(f"{self.entry_id!r} is already {entry.state}: nothing to {operation}")
            return
        question = confirm_question(operation, entry, self.scope, note)
        self.app.push_screen(ConfirmScreen(self.session, self.scope, entry, operation, question), self._written)

    def action_forget(self) -> None:
        """Forget erases every version, so it works from any revision shown (the dialog says what goes)."""
        if self.detail is not None:
            versions = max(event.entry.version for event in self.detail.history.events)
            self.app.push_screen(ForgetEntryScreen(self.session, self.scope, self.detail.entry, versions),
                                 self._forgotten)

    def _forgotten(self, outcome: Outcome | None) -> None:
        """The entry cannot be read any more, in any version: back past its screens to the list (which reloads),
        saying what happened there."""
        if outcome is None:
            return
        stack = self.app.screen_stack
        while isinstance(stack[-1], EntryScreen) and (stack[-1].scope, stack[-1].entry_id) == (self.scope, self.entry_id):
            self.app.pop_screen()  # this entry's other versions went too
            stack = self.app.screen_stack
        if isinstance(stack[-1], StoreScreen):
            stack[-1].status.info(f"{outcome.verb} → revision {outcome.result.memory.revision}")

    def action_open_in_editor(self) -> None:
        """``o``: the text in ``$EDITOR``. At the head of an active entry a changed text opens Revise with it (saved
        with compare-and-swap on the version read, like ``e``); elsewhere the file is read-only and nothing is saved."""
        if self.detail is None:
            return
        entry = self.detail.entry
        editable = self.is_head and entry.state == "active"
        try:
            edited = edit_text(self.app, self.pcmem_app.editor, entry.entry.text,
                               f"{self.scope}-{self.entry_id}", read_only=not editable)
        except EditorError as error:
            self.status.error(str(error))
            return
        if edited.strip() == entry.entry.text:
            self.status.info("closed the editor: the text is unchanged")
        elif not editable:
            why = "retired" if self.is_head else f"a past version (revision {entry.citation.revision})"
            self.status.error(f"this text is {why} and read-only: the editor's changes were not saved")
        else:
            self.app.push_screen(ReviseScreen(self.session, self.scope, entry, edited), self._written)

    def _written(self, outcome: Outcome | None) -> None:
        if outcome is not None:
            self.status.info(f"{outcome.verb} → revision {outcome.result.memory.revision}")
            self.revision = None
            self.load()


def _revision_cell(event: HistoryEvent, marked: bool) -> Text:
    return Text(f"●r{event.revision}", style="bold yellow") if marked else Text(f"r{event.revision}")


def _history_row(event: HistoryEvent, marked: bool = False, *, narrow: bool = False) -> tuple[Cell, ...]:
    """One version's cells (made only while its row is drawn; the table cuts the text and the reason to their
    columns: ``/`` finds a reason's every word)."""
    reason = one_line(event.reason or "", "italic")
    if narrow:
        return (_revision_cell(event, marked), event.operation, f"v{event.entry.version}", when(event.created_at)[:16],
                reason, one_line(event.entry.text))
    return (_revision_cell(event, marked), event.operation, state_text(event.state), f"v{event.entry.version}",
            when(event.created_at), reason, one_line(event.entry.text))


def _history_words(item: tuple[int, HistoryEvent]) -> str:
    """What ``/`` and ``:`` look in: the revision as shown (r3), the operation, state, version, time and text."""
    _, event = item
    return f"r{event.revision} {event.operation} {event.state} v{event.entry.version} {when(event.created_at)} " \
           f"{event.reason or ''} {event.entry.text}"


def shown_index(detail: EntryDetail) -> int:
    """The index in the entry's history of the version shown (its last event up to the revision read)."""
    shown = detail.entry.citation.revision
    return max((i for i, event in enumerate(detail.history.events) if event.revision <= shown), default=0)


def changed_since(detail: EntryDetail) -> tuple[HistoryEvent, ...]:
    """The entry's own events after the version shown (none: what is shown is its present)."""
    return detail.history.events[shown_index(detail) + 1:]


def _changes(events: tuple[HistoryEvent, ...]) -> str:
    return ", ".join(f"r{event.revision} {event.operation}" for event in events[-3:]) + \
        (f" and {len(events) - 3} more" if len(events) > 3 else "")


def _head(detail: EntryDetail, past: bool) -> Text:
    entry = detail.entry
    version = entry.entry
    head = Text.assemble((version.entry_id, "bold"), f"  {version.kind} · v{version.version} · ",
                         state_text(entry.state), f" · as of revision {entry.citation.revision}")
    later = changed_since(detail)
    if later and past:
        head.append("  ◷ past · read-only (h: newest)", style="bold yellow")
    elif later:
        head.append(f"  ⚠ changed since you opened it: {_changes(later)} (h: show it)", style="bold yellow")
    return head


def _meta(entry: MemoryEntry, width: int) -> Text:
    version = entry.entry
    meta = Text()
    meta.append("written ", style="dim").append(f"{when(version.created_at)} UTC in r{version.created_in_revision}"
                                                 f" · sha256 {version.content_hash[:12]}")
    if version.metadata:
        meta.append(" · metadata ", style="dim").append(json.dumps(version.metadata, ensure_ascii=False))
    meta.append("\ncitation ", style="dim")
    return meta + citation_text(entry.citation, max(width - 9, 20))
