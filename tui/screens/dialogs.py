"""Modal dialogs: confirm a write, write a new entry, revise one, pick a revision."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static, TextArea

from pcmem import InputError, MemoryEntry, NewEntry, PcmemError, RevisionConflictError, WriteResult
from pcmem_tui.diff import text_diff
from pcmem_tui.drafts import Draft, Drafts, remember_key, revise_key
from pcmem_tui.messages import WorkFailed, Written

if TYPE_CHECKING:
    from pcmem_tui.session import Session


class Outcome(NamedTuple):
    """What a write dialog returns: a past-tense verb for the status line and pcmem's result."""

    verb: str
    result: WriteResult


class Conflict(Message):
    """The entry changed since the user read it; ``current`` is how it stands at the head now."""

    def __init__(self, current: MemoryEntry) -> None:
        super().__init__()
        self.current = current


class WriteDialog(ModalScreen[Outcome | None]):
    """A dialog that writes while it is open, so nothing the user typed is lost when the write fails.

    The write runs in a thread worker; success dismisses with an :class:`Outcome`, an error stays in the dialog
    (with the text), and a per-entry conflict shows how the entry changed and re-arms the dialog on the new version.
    """

    def __init__(self, session: Session, scope: str, read: MemoryEntry | None = None) -> None:
        super().__init__(classes="dialog")
        self.session, self.scope, self.read = session, scope, read
        self.expected_version = read.entry.version if read else None
        self.busy = False

    def write(self) -> Outcome:
        """The write itself (called in the worker thread); raises PcmemError."""
        raise NotImplementedError

    def submit(self) -> None:
        if not self.busy:
            self.busy = True
            self.show_error(Text("saving…", style="dim"))
            self._write()

    @work(thread=True, exclusive=True, group="dialog-write")
    def _write(self) -> None:
        try:
            message: Message = Written(self.write())
        except RevisionConflictError as error:
            message = self._conflict(error)
        except PcmemError as error:
            message = WorkFailed(str(error))
        self.post_message(message)

    def _conflict(self, error: RevisionConflictError) -> Message:
        if self.read is None:
            return WorkFailed(str(error))
        try:
            return Conflict(self.session.current(self.scope, self.read.entry.entry_id))
        except PcmemError as lookup_error:
            return WorkFailed(f"{error} ({lookup_error})")

    def on_written(self, message: Written) -> None:
        self.dismiss(message.value)

    def on_work_failed(self, message: WorkFailed) -> None:
        self.busy = False
        self.show_error(Text(f"✗ {message.text}", style="red"))

    def on_conflict(self, message: Conflict) -> None:
        self.busy = False
        assert self.read is not None
        changed = describe_conflict(self.read, message.current)
        self.read, self.expected_version = message.current, message.current.entry.version
        self.show_error(changed + Text(f"\n{self.again}", style="bold"))

    again = "Save again to write over it, or cancel."

    def show_error(self, text: Text) -> None:
        self.query_one("#dialog-error", Static).update(text)


def describe_conflict(read: MemoryEntry, current: MemoryEntry) -> Text:
    """What somebody else did to the entry since the user read it (state, version and a diff of the text)."""
    text = Text("✗ changed since you opened it: ", style="bold yellow")
    text.append(f"v{read.entry.version} {read.state} → v{current.entry.version} {current.state}\n")
    if read.entry.text != current.entry.text:
        text.append_text(text_diff(read.entry.text, current.entry.text))
    return text


def confirm_question(operation: str, entry: MemoryEntry, scope: str, note: str) -> str:
    """The question names the entry by its text (what the user recognises), then its id and version."""
    text = " ".join(entry.entry.text.split())
    shown = text if len(text) <= 140 else text[:139] + "…"
    return (f"{operation.capitalize()} this entry of {scope!r}?\n“{shown}”\n"
            f"{entry.entry.entry_id} · v{entry.entry.version}\n{note}")


class ConfirmScreen(WriteDialog):
    """Yes or no to one write on one entry; ``y``/``n`` answer without the mouse. ``y`` writes; the dialog stays
    open on an error or a conflict (``y`` again then writes over the newer version)."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]
    again = "Press y to do it anyway (on the new version), or n to cancel."

    #: Whether the dialog has a reason field (a forget keeps no reason: it keeps only a tombstone).
    asks_reason = True

    def __init__(self, session: Session, scope: str, read: MemoryEntry, operation: str, question: str) -> None:
        super().__init__(session, scope, read)
        self.operation, self.question = operation, question
        self.reason: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Static(Text(self.question), classes="dialog-question")
            if self.asks_reason:
                yield reason_field("tab, then type: kept with the revision; enter does it")
            yield Static(id="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.operation.capitalize()} (y)", variant="error", id="yes")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_conflict(self, message: Conflict) -> None:
        message.prevent_default()  # Textual would call WriteDialog.on_conflict after this one as well
        target = "retired" if self.operation == "retire" else "active"
        if message.current.state != target:
            super().on_conflict(message)
            return
        assert self.read is not None
        self.busy = True  # nothing left to write: y does nothing more, n closes
        self.show_error(describe_conflict(self.read, message.current)
                        + Text(f"\nSomebody else already did it: it is {target}. n closes.", style="bold"))

    def write(self) -> Outcome:
        assert self.read is not None and self.expected_version is not None
        entry_id = self.read.entry.entry_id
        call = getattr(self.session, self.operation)
        return Outcome(f"{self.operation}d {entry_id!r}",
                       call(self.scope, entry_id, self.expected_version, reason=self.reason))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "reason":
            self.action_answer(True)

    def action_answer(self, answer: bool) -> None:
        if answer and self.asks_reason:
            self.reason = self.query_one("#reason", Input).value.strip() or None
        self.submit() if answer else self.dismiss(None)


class DraftDialog(WriteDialog):
    """A dialog the user types into: esc with unsaved text asks whether to keep it as a draft (reopened with the
    dialog) or discard it; a saved text drops the draft."""

    BINDINGS = [Binding("ctrl+s", "save", "Save"), Binding("escape", "cancel", "Cancel")]

    def __init__(self, session: Session, scope: str, read: MemoryEntry | None = None) -> None:
        super().__init__(session, scope, read)
        self.draft_key: tuple[str, ...] = ()
        self.restored: Draft | None = None

    @property
    def drafts(self) -> Drafts:
        return self.app.drafts  # type: ignore[attr-defined]

    def typed(self) -> Draft:
        """What the fields hold now."""
        raise NotImplementedError

    def untouched(self) -> Draft:
        """What the fields held when the dialog opened without a draft (closing on that asks nothing)."""
        raise NotImplementedError

    def on_written(self, message: Written) -> None:
        self.drafts.drop(self.draft_key)  # (WriteDialog's handler dismisses)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_save() if event.button.id == "save" else self.action_cancel()

    def action_save(self) -> None:
        raise NotImplementedError

    def action_cancel(self) -> None:
        typed = self.typed()
        if typed == self.untouched():
            self.drafts.drop(self.draft_key)
            self.dismiss(None)
        elif typed == self.restored:
            self.dismiss(None)  # the kept draft, unchanged: it stays kept
        else:
            self.app.push_screen(KeepDraftScreen(), self._after_asking)

    def _after_asking(self, answer: str | None) -> None:
        if answer == "keep":
            self.drafts.keep(self.draft_key, self.typed())
            self.dismiss(None)
        elif answer == "discard":
            self.drafts.drop(self.draft_key)
            self.dismiss(None)
        else:
            self.query_one(TextArea).focus()  # back to editing


class KeepDraftScreen(ModalScreen[str | None]):
    """Closing a dialog with unsaved text: keep it as a draft (the default), discard it, or go back to editing."""

    BINDINGS = [Binding("k,enter", "answer('keep')", "Keep draft"), Binding("d", "answer('discard')", "Discard"),
                Binding("escape", "answer('')", "Back to editing")]

    def __init__(self) -> None:
        super().__init__(classes="dialog")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Static(Text("Close with unsaved text? A kept draft comes back when you open this dialog again."),
                         classes="dialog-question")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Keep draft (k)", variant="primary", id="keep")
                yield Button("Discard (d)", variant="error", id="discard")
                yield Button("Back (esc)", id="back")

    def on_mount(self) -> None:
        self.query_one("#keep", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer("" if event.button.id == "back" else str(event.button.id))

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer or None)


class RememberScreen(DraftDialog):
    """Write a new entry. pcmem validates it here (kind, text limits, id, metadata) so mistakes show before anything is
    written; the write needs no compare-and-swap (a new entry conflicts with nothing). An id of your own makes the
    entry a key: with upsert, writing the same id again gives it a new version instead of failing."""

    def __init__(self, session: Session, scope: str | None, *, suggested: str | None = None) -> None:
        """``scope``: the scope to write to (no scope field); ``None`` asks for one, filled with ``suggested``."""
        super().__init__(session, scope or "")
        self.fixed_scope, self.suggested = scope, suggested
        self.draft: NewEntry | None = None
        self.upsert = False
        self.draft_key = remember_key(scope)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            title = f"Remember in {self.fixed_scope!r}" if self.fixed_scope else "Remember"
            yield Label(Text(title), classes="dialog-question")
            with Horizontal(classes="dialog-fields"):
                if self.fixed_scope is None:
                    yield Input(self.suggested or "", placeholder="scope", id="scope")
                yield Input(value="fact", placeholder="kind", id="kind")
                yield Input(placeholder="generated", id="id", tooltip="your own id makes the entry a key")
            with Horizontal(classes="dialog-fields"):
                yield Input(placeholder='{"source": "chat"}', id="metadata",
                            tooltip="a JSON object; with upsert, blank keeps the entry's metadata and {} clears it")
                yield Checkbox("upsert", id="upsert", tooltip="the id exists: write a new version of it")
            yield reason_field()
            yield TextArea(id="text", soft_wrap=True)
            yield Static(id="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (ctrl+s)", variant="primary", id="save")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        for widget in self.query("#scope, #kind, #id, #metadata, #text"):
            widget.border_title = widget.id
        self.restored = self.drafts.get(self.draft_key)
        if self.restored is not None:
            if self.fixed_scope is None:
                self.query_one("#scope", Input).value = self.restored.scope
            self.query_one("#kind", Input).value = self.restored.kind
            self.query_one("#id", Input).value = self.restored.entry_id
            self.query_one("#metadata", Input).value = self.restored.metadata
            self.query_one("#reason", Input).value = self.restored.reason
            self.query_one(Checkbox).value = self.restored.upsert
            area = self.query_one(TextArea)
            area.text = self.restored.text
            area.move_cursor(area.document.end)
            self.show_error(Text("your draft, as you left it (esc: keep or discard it)", style="dim"))
        asks_scope = self.fixed_scope is None and self.restored is None and not self.suggested
        self.query_one("#scope" if asks_scope else "#text").focus()

    def typed(self) -> Draft:
        scope = self.fixed_scope if self.fixed_scope is not None else self.query_one("#scope", Input).value
        return Draft(text=self.query_one(TextArea).text, kind=self.query_one("#kind", Input).value, scope=scope,
                     entry_id=self.query_one("#id", Input).value, metadata=self.query_one("#metadata", Input).value,
                     upsert=self.query_one(Checkbox).value, reason=self.query_one("#reason", Input).value)

    def untouched(self) -> Draft:
        return Draft(text="", kind="fact", scope=self.fixed_scope or self.suggested or "")

    def action_save(self) -> None:
        typed = self.typed()
        scope = typed.scope.strip()
        try:
            if not scope:
                raise InputError("scope must not be empty")
            if typed.upsert and not typed.entry_id.strip():
                raise InputError("upsert needs an id: it writes a new version of the entry with that id")
            self.draft = NewEntry(text=typed.text, kind=typed.kind, metadata=metadata_object(typed.metadata),
                                  entry_id=typed.entry_id.strip() or None)
        except InputError as error:
            self.show_error(Text(f"✗ {error}", style="red"))
            return
        self.scope, self.upsert = scope, typed.upsert
        self.reason = typed.reason.strip() or None
        self.keep_metadata = not typed.metadata.strip()  # an upsert with the field blank: the entry keeps its own
        self.submit()

    reason: str | None = None
    keep_metadata = False

    def write(self) -> Outcome:
        assert self.draft is not None
        result = self.session.remember(self.scope, self.draft, upsert=self.upsert, reason=self.reason,
                                       keep_metadata=self.keep_metadata)
        if not self.upsert:
            return Outcome("remembered 1 entry", result)
        entry_id = result.citations[0].entry_id
        if entry_id in result.unchanged_entry_ids:
            return Outcome(f"{entry_id!r} unchanged (it already holds exactly this)", result)
        return Outcome(f"upserted {entry_id!r}", result)


def metadata_object(typed: str) -> dict[str, Any]:
    """The metadata field: blank for none, else a JSON object (pcmem then checks its size and values)."""
    if not typed.strip():
        return {}
    try:
        value = json.loads(typed)
    except ValueError as error:
        raise InputError(f'metadata must be a JSON object, e.g. {{"source": "chat"}} ({error})') from None
    if not isinstance(value, dict):
        raise InputError(f'metadata must be a JSON object, e.g. {{"source": "chat"}}, not {type(value).__name__}')
    return value


class ReviseScreen(DraftDialog):
    """A new version of the entry being viewed, checked against that entry only (its version when opened, or the
    version a kept draft was written against)."""

    def __init__(self, session: Session, scope: str, read: MemoryEntry, edited: str | None = None) -> None:
        super().__init__(session, scope, read)
        self.draft_key = revise_key(scope, read.entry.entry_id)
        self.edited = edited  # the text as the user's $EDITOR left it: ctrl+s saves it

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(id="revise-title", classes="dialog-question")
            yield TextArea(self.read.entry.text if self.read else "", id="text", soft_wrap=True)
            yield reason_field()
            yield Static(id="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (ctrl+s)", variant="primary", id="save")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        assert self.read is not None
        area = self.query_one(TextArea)
        area.border_title = "text"
        self.restored = self.drafts.get(self.draft_key)
        if self.restored is not None:
            area.text = self.restored.text
            self.query_one("#reason", Input).value = self.restored.reason
            self.expected_version = self.restored.version
            note = "your draft, as you left it (esc: keep or discard it)"
            if self.restored.version != self.read.entry.version:
                note += (f"; it was written against v{self.restored.version}, the entry is v{self.read.entry.version} "
                         "now: saving shows what changed first")
            self.show_error(Text(note, style="dim"))
        if self.edited is not None:  # written against the version on screen, whatever a kept draft said
            area.text, self.expected_version = self.edited, self.read.entry.version
            self.show_error(Text("as your editor left it: ctrl+s saves it as a new version, esc keeps or discards it",
                                 style="dim"))
        self._show_title()
        area.move_cursor(area.document.end)  # typing continues the text, it does not land before it
        area.focus()

    def _show_title(self) -> None:
        assert self.read is not None
        self.query_one("#revise-title", Label).update(
            Text(f"Revise {self.read.entry.entry_id!r} (v{self.expected_version}) in {self.scope!r}"))

    def on_conflict(self, message: Conflict) -> None:
        self.call_after_refresh(self._show_title)  # (WriteDialog's handler moves the expected version first)

    def typed(self) -> Draft:
        return Draft(text=self.query_one(TextArea).text, version=self.expected_version,
                     reason=self.query_one("#reason", Input).value)

    def untouched(self) -> Draft:
        assert self.read is not None
        return Draft(text=self.read.entry.text, version=self.expected_version)

    def action_save(self) -> None:
        self.text = self.query_one(TextArea).text  # read here: widgets belong to the event loop, not the worker
        self.reason = self.query_one("#reason", Input).value.strip() or None
        self.submit()

    reason: str | None = None

    def write(self) -> Outcome:
        assert self.read is not None and self.expected_version is not None
        text = self.text
        entry_id = self.read.entry.entry_id
        return Outcome(f"revised {entry_id!r}",
                       self.session.revise(self.scope, entry_id, text, self.expected_version, reason=self.reason))


def reason_field(tooltip: str = "why this write is made: kept with the revision (pcmem changes shows it)") -> Input:
    """An optional reason for the write (at most 512 characters: pcmem says so in one line past that)."""
    field = Input(placeholder="reason (optional)", id="reason", tooltip=tooltip)
    field.border_title = "reason"
    return field
