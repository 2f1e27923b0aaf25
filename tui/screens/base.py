"""What every store-backed screen shares: the session, running a store call off the event loop, error display."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import events, on
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from pcmem import PcmemError
from pcmem_tui.messages import Loaded, Progress, WorkFailed
from pcmem_tui.widgets import StatusLine, WorkProgress

if TYPE_CHECKING:
    from pcmem_tui.session import Session


class StoreScreen(Screen):
    """A screen whose data comes from the store. Subclasses start thread workers that call :meth:`deliver`."""

    BINDINGS = [Binding("escape", "back", "Back")]

    _session: Session | None = None

    @on(events.Mount)
    def _keep_session(self) -> None:
        """Held by the screen: a worker thread still finishing while the app exits must not need the active app."""
        self._session = self.app.session  # type: ignore[attr-defined]

    @property
    def session(self) -> Session:
        if self._session is None:
            self._keep_session()
        assert self._session is not None
        return self._session

    def deliver(self, call: Callable[[], Any], wrap: type[Loaded]) -> None:
        """Run ``call`` (from a worker thread) and post ``wrap(result)``, or WorkFailed with pcmem's message.

        A worker superseded by a newer one (``exclusive=True``) still finishes its call, but posts nothing.
        """
        worker = get_current_worker()
        try:
            message: Loaded | WorkFailed = wrap(call())
        except PcmemError as error:
            message = WorkFailed(str(error))
        if not worker.is_cancelled:
            self.post_message(message)

    def report_progress(self, stage: str, done: int, total: int) -> None:
        """A progress callback for the session (called from the worker thread)."""
        self.post_message(Progress(stage, done, total))

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def on_work_failed(self, message: WorkFailed) -> None:
        self._stop_progress()
        self.status.error(message.text)
        self.notify(message.text, title="pcmem", severity="error", markup=False)

    def on_progress(self, message: Progress) -> None:
        self.query_one(WorkProgress).advance(message.stage, message.done, message.total)

    def _stop_progress(self) -> None:
        for strip in self.query(WorkProgress):
            strip.finish()

    # Any store call that takes longer than this shows that it is running (the target for an interaction is
    # 300 ms; past it, the user sees why nothing changed yet).
    BUSY_AFTER = 0.3

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.RUNNING:
            self._busy.add(event.worker)
            self.set_timer(self.BUSY_AFTER, self._show_busy)
        elif event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self._busy.discard(event.worker)
            if not self._busy:
                self._hide_busy()

    @property
    def _busy(self) -> set[Worker]:
        if not hasattr(self, "_busy_workers"):
            self._busy_workers: set[Worker] = set()
        return self._busy_workers

    def _show_busy(self) -> None:
        if self._busy and self.is_mounted:
            for strip in self.query(WorkProgress):
                if not strip.display:
                    strip.advance("reading the store…", 0, 0)

    def _hide_busy(self) -> None:
        for strip in self.query(WorkProgress):
            strip.finish()

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:  # never pop the root scopes screen
            self.app.pop_screen()
