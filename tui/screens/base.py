"""What every store-backed screen shares: the session, running a store call off the event loop, error display,
the busy strip, cancelling work, and the status bar that says how current the data is."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from textual import events, on
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from pcmem import PcmemError, StoreError, StoreLockedError
from pcmem_tui.freshness import advice
from pcmem_tui.messages import Loaded, Progress, StoreStateChanged, WorkFailed
from pcmem_tui.session import Cancelled
from pcmem_tui.widgets import StatusLine, StoreBar, WorkProgress

if TYPE_CHECKING:
    from pcmem_tui.app import PcmemApp
    from pcmem_tui.session import Session


class StoreScreen(Screen):
    """A screen whose data comes from the store. Subclasses start thread workers that call :meth:`deliver`."""

    BINDINGS = [Binding("escape", "back", "Back/Cancel")]

    _session: Session | None = None

    @on(events.Mount)
    def _keep_session(self) -> None:
        """Held by the screen: a worker thread still finishing while the app exits must not need the active app."""
        self._session = self.pcmem_app.session

    @property
    def pcmem_app(self) -> PcmemApp:
        """The app with its own attributes typed (Textual types ``self.app`` as any App); every store screen runs
        inside pcmem's."""
        return cast("PcmemApp", self.app)

    @property
    def session(self) -> Session:
        if self._session is None:
            self._keep_session()
        assert self._session is not None
        return self._session

    def deliver(self, call: Callable[[], Any], wrap: type[Loaded]) -> None:
        """Run ``call`` (from a worker thread) and post ``wrap(result)``, or WorkFailed with pcmem's message.

        A worker cancelled meanwhile (superseded by a newer one, esc, the screen closed) still finishes a store call
        but posts nothing; a rerank stops at its next candidate (:class:`Cancelled`).
        """
        worker = get_current_worker()
        freshness = self.session.freshness
        try:
            message: Loaded | WorkFailed = wrap(call())
            freshness.note_read()
        except Cancelled:
            return
        except StoreError as error:
            freshness.note_failure(error)
            message = WorkFailed(self._store_failure(error))
        except PcmemError as error:
            message = WorkFailed(str(error))
        if not worker.is_cancelled:
            self.post_message(message)
        self.post_message(StoreStateChanged())

    def _store_failure(self, error: StoreError) -> str:
        """pcmem's advice for a held file is for programs ("open it with pcmem.open"); here it is what the user
        sees and what happens next."""
        if isinstance(error, StoreLockedError):
            fresh = self.session.freshness
            shown = f"showing what was read at {fresh.read_at:%H:%M:%S}" if fresh.read_at else "nothing read yet"
            return f"the store is held by {fresh.holder}: {shown}; retrying every second (esc: back)"
        said = advice(error, self.session.path)
        return f"{error}\n{said}" if said else str(error)

    def cancel_check(self) -> Callable[[], bool]:
        """For the session's long calls, from inside a worker: whether this worker has been cancelled."""
        worker = get_current_worker()
        return lambda: worker.is_cancelled

    def report_progress(self, stage: str, done: int, total: int) -> None:
        """A progress callback for the session (called from the worker thread)."""
        if not get_current_worker().is_cancelled:
            self.post_message(Progress(stage, done, total))

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def on_work_failed(self, message: WorkFailed) -> None:
        self._hide_busy()
        self.status.error(message.text)
        if not self.session.freshness.stale:  # a held file is said once, on the status line and the status bar
            self.notify(message.text, title="pcmem", severity="error", markup=False)

    def on_progress(self, message: Progress) -> None:
        self.query_one(WorkProgress).advance(message.stage, message.done, message.total)

    def on_store_state_changed(self, message: StoreStateChanged) -> None:
        for bar in self.query(StoreBar):
            bar.show(self._session)

    @on(events.ScreenResume)
    def _show_store_state(self) -> None:
        self.on_store_state_changed(StoreStateChanged())

    def copy_citation(self, citation: object) -> None:
        """``y`` (and ``c``) on any row with a citation. OSC 52 cannot report whether the terminal took the text, so
        the status line says what was sent instead of claiming success."""
        self.app.copy_to_clipboard(str(citation))
        self.status.info(f"sent {citation} to the terminal as OSC 52 (tmux: `set -g set-clipboard on`)")

    # --- busy strip and cancel ---------------------------------------------------------------------------------
    # Any store call that takes longer than this shows that it is running (the target for an interaction is
    # 300 ms; past it, the user sees why nothing changed yet).
    BUSY_AFTER = 0.3

    def _live_workers(self) -> list[Worker]:
        """This screen's work the user is waiting for. Read from the workers themselves, not kept from their state
        messages: Textual sends none for a worker cancelled before it started (an ``exclusive`` worker replaced at
        once), and a set fed by those messages kept such a worker "running" for ever."""
        return [worker for worker in self.app.workers
                if worker.node is self and not worker.is_finished and not worker.is_cancelled]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.RUNNING:
            self.set_timer(self.BUSY_AFTER, self._show_busy)
        elif not self._live_workers():
            self._hide_busy()

    def _show_busy(self) -> None:
        if self.is_mounted and self._live_workers():
            for strip in self.query(WorkProgress):
                if not strip.display:
                    strip.advance("reading the store…", 0, 0)

    def _hide_busy(self) -> None:
        for strip in self.query(WorkProgress):
            strip.finish()

    def refresh_from_store(self) -> None:
        """Reload what this screen shows after the store moved on (another writer); a screen that shows nothing of
        the store's keeps this no-op. The screens below the top one reload when they come back (on_screen_resume)."""

    def cancel_work(self) -> bool:
        """Stop what this screen is waiting for (a rerank stops at its next candidate; a store call's result is
        dropped). Whether there was anything to stop."""
        live = self._live_workers()
        for worker in live:
            worker.cancel()
        if live:
            stage = next((strip.stage for strip in self.query(WorkProgress) if strip.display), "") or "the work"
            self._hide_busy()
            self.status.info(f"cancelled: {stage.rstrip('…')}")
        return bool(live)

    def action_back(self) -> None:
        """esc: cancel running work first; pressed again (or with nothing running), go back."""
        if self.cancel_work():
            return
        if len(self.app.screen_stack) > 2:  # never pop the root scopes screen
            self.app.pop_screen()


def refuse_read_only(screen: StoreScreen) -> bool:
    """``n`` on a store this user cannot write: said at once, not after the text is typed and saved."""
    if not screen.session.read_only():
        return False
    screen.status.error(f"{screen.session.path} is read-only for you: nothing can be written to it")
    return True
