"""The pcmem Textual app and :func:`make_app`, the one factory that ``pcmem tui`` and the tests both use.

>>> app = make_app("memory.duckdb", model="llama-cpp:smollm2-135m-instruct")   # doctest: +SKIP
>>> app.run()                                                                  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Header, Static
from textual.worker import get_current_worker

from pcmem import InferenceConfig, PcmemError, StoreError, StoreLockedError, SyncRuntime
from pcmem_tui import garbage
from pcmem_tui.drafts import Drafts, describe, drafts_file
from pcmem_tui.freshness import advice
from pcmem_tui.history import SearchHistory, history_file
from pcmem_tui.messages import EmbedderWarmed, ScopesLoaded, StoreOpened, StoreStateChanged, WorkFailed
from pcmem_tui.notices import Notices
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.help import HelpScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.session import Session
from pcmem_tui.widgets import key_footer

#: Worker groups that run beside the user: waiting for a moment to warm up in, they do not count as screens waiting.
BACKGROUND = ("watch", "warm-up", "embedder")


class PcmemApp(App[None]):
    """Scopes → entries → entry, and search → trace, on one store."""

    CSS_PATH = "app.tcss"
    TITLE = "pcmem"
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("f1", "help", "Help", show=False),
        # q on the root screen quits; deeper it goes back one screen (shown on the scopes screen only: 80 columns
        # are tight elsewhere). ctrl+c quits from anywhere.
        Binding("q", "back_or_quit", "Back/Quit", show=False),
        # ctrl+c stops running work (a rerank, a load) wherever the focus is; with nothing running it keeps
        # Textual's meaning (copy in a text field, else how to quit).
        Binding("ctrl+c", "cancel_or_copy", "Cancel work", show=False, priority=True),
        # to the shell, as lazygit and btop do (fg comes back); the store is handed on meanwhile
        Binding("ctrl+z", "suspend_to_shell", "Suspend", show=False),
    ]
    #: Seconds between two looks at the store for outside writes (an agent, the CLI): one stat() of the file and
    #: its WAL; the scopes' heads are read only when the file changed.
    WATCH_INTERVAL = 1.0
    #: How a service manager or a closed terminal stops a program. Python's default for both is to die on the spot,
    #: leaving the terminal in raw mode and a write cut short; the app quits as ``q`` does instead (exit status 0).
    #: (Windows has no SIGHUP: a console's Ctrl-Break, SIGBREAK, stands in.)
    STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGBREAK") if hasattr(signal, name))

    #: Seconds between two attempts to open a store another process holds.
    OPEN_RETRY = 1.0

    def __init__(self, source: SyncRuntime | str | Path, inference: InferenceConfig,
                 open_options: dict[str, Any] | None = None, editor: str | None = None) -> None:
        super().__init__()
        self._source = source
        #: The command line ``o`` opens a text with (``$VISUAL``/``$EDITOR``, read by ``pcmem tui``).
        self.editor = editor
        self._open_options = open_options or {}
        self.inference = inference
        self.session: Session | None = None
        self._signal_handlers: dict[int, Any] = {}
        self.drafts = Drafts(None if isinstance(source, SyncRuntime) else drafts_file(source))
        #: The search screen's mode, limit and rerank policy as last used: a new visit starts from them.
        self.search_defaults: dict[str, str] = {}
        #: ↑/↓ in the search field: kept across sessions per store file (this session only for an open runtime).
        self.search_history = SearchHistory(None if isinstance(source, SyncRuntime) else history_file(source))
        self._notices = Notices(self)

    def compose(self) -> ComposeResult:
        """The waiting room shown while the store opens (and the place an open failure is explained)."""
        yield Header()
        yield Static(Text(f"opening {self._source_name()}…"), id="opening")
        yield key_footer()

    def _source_name(self) -> str:
        return "the store" if isinstance(self._source, SyncRuntime) else str(self._source)

    def on_mount(self) -> None:
        self._quit_on_stop_signals()
        self._notices.attach()  # before the store opens: what opening it did is said on screen
        if isinstance(self._source, SyncRuntime):
            self.post_message(StoreOpened(Session(self._source, self.inference)))
        else:
            self.open_store(self._source)

    @work(thread=True, exclusive=True)
    def open_store(self, path: str | Path) -> None:
        worker = get_current_worker()
        try:
            message: StoreOpened | WorkFailed = StoreOpened(Session.open(path, self.inference, **self._open_options))
        except StoreLockedError as error:  # another process holds it: wait for it here instead of giving up
            message = WorkFailed(f"waiting for the store: {error}", retry=True)
        except StoreError as error:  # damaged, unreadable, another program's file: what to do, as check says it
            said = advice(error, path)
            message = WorkFailed(f"cannot open {path}: {error}" + (f"\n\n{said}" if said else ""))
        except PcmemError as error:
            message = WorkFailed(f"cannot open {path}: {error}")
        if not worker.is_cancelled:
            self.post_message(message)

    def on_store_opened(self, message: StoreOpened) -> None:
        self.session = session = message.value
        session.embedder_loading = session.embedder_to_load()  # said before the first screen paints
        self.push_screen(ScopesScreen())
        self.set_interval(self.WATCH_INTERVAL, self.watch_store, name="watch-store")
        if session.embedder_loading:  # at the first moment no screen waits on the store (loading a model beside a
            self.when_idle(lambda: self.warm_embedder(session))  # big scope's rows tripled their wait)

    @work(thread=True, group="embedder")
    def warm_embedder(self, session: Session) -> None:
        """The embedding model loads while the user browses (a real model takes seconds): the first search then
        starts at once instead of stalling on it. The status bar says it is loading, and why it failed if it did."""
        try:
            session.warm_embedder()
        except PcmemError as error:
            session.embedder_failure = f"embedder not loaded ({error}): full-text search only"
        session.embedder_loading = None
        self.post_message(EmbedderWarmed())

    _reads_warmed = False
    #: Seconds between two looks for a moment to warm the reads up in: no screen loading, and no key or click for
    #: :attr:`WARM_AFTER_INPUT` seconds (the user reads or types; a warm-up beside a screen they just opened slowed
    #: that screen by its ~0.2 s of CPU).
    WARM_WHEN_IDLE, WARM_AFTER_INPUT = 0.2, 1.0
    _last_input = 0.0

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown)):
            self._last_input = time.monotonic()
        await super().on_event(event)

    def on_scopes_loaded(self, message: ScopesLoaded) -> None:
        """(Bubbled up from the scopes screen.) Once the first screen is drawn, warm the reads up in the background,
        at a moment no screen is loading: beside the first screen or a scope opening at once it would share the
        CPU (and the GIL) with them."""
        if not self._reads_warmed and self.session is not None:
            self._reads_warmed = True
            session = self.session
            self.when_idle(lambda: self.warm_reads(session), quiet_input=True)

    def when_idle(self, then: Callable[[], object], *, quiet_input: bool = False) -> None:
        """Call ``then`` at the first moment no screen waits on the store (looked at every :attr:`WARM_WHEN_IDLE`
        seconds); ``quiet_input``: and no key or click came for :attr:`WARM_AFTER_INPUT` seconds."""
        def look() -> None:
            busy = any(not worker.is_finished and worker.group not in BACKGROUND for worker in self.workers)
            if busy or quiet_input and time.monotonic() - self._last_input < self.WARM_AFTER_INPUT:
                self.set_timer(self.WARM_WHEN_IDLE, look)
            else:
                then()
        self.set_timer(self.WARM_WHEN_IDLE, look)

    def warm_scope(self, scope: str, *, at_once: bool = False) -> None:
        """A scope's search indexes read into memory before its first search (the vector cache of a 10,000-entry
        scope took most of a second of that search): on the search screen at once (the user types the query
        meanwhile), after a scope's rows are shown when nothing else waits."""
        session = self.session
        if session is None or not session.warms(scope):
            return
        if at_once:
            self.warm_search(session, scope)
        else:
            self.when_idle(lambda: self.warm_search(session, scope))

    @work(thread=True, group="warm-up")
    def warm_search(self, session: Session, scope: str) -> None:
        try:
            session.warm_search(scope)
        except PcmemError:
            pass  # the user's own search pays for it, and says what is wrong

    @work(thread=True, group="warm-up")
    def warm_reads(self, session: Session) -> None:
        """The first open of a scope and the first search then cost what later ones do (see Session.warm_reads)."""
        try:
            session.warm_reads()
        except PcmemError:
            pass  # nothing was warmed: the user's first read pays for it, and says what is wrong if it fails too

    def on_embedder_warmed(self, message: EmbedderWarmed) -> None:
        self._show_store_state()

    def watch_store(self) -> None:
        """Outside writes appear without ``r``: when the file changed, compare the scopes' head revisions. While the
        last read failed (another process holds the file), look every time: the holder may release the file
        without changing it, and the screen recovers by itself."""
        session = self.session
        if session is None or any(w.group == "watch" and not w.is_finished for w in self.workers):
            return
        fresh = session.freshness
        if fresh.stale and not fresh.due():
            return  # a damaged or missing file: the looks back off, then stop (r on a list tries again)
        if session.file_changed() or fresh.stale or session.owner_gone():
            self.check_heads()

    @work(thread=True, group="watch")
    def check_heads(self) -> None:
        assert self.session is not None
        freshness = self.session.freshness
        was_stale = freshness.stale
        try:
            moved = self.session.heads_moved()
            if not was_stale or freshness.holder is not None:  # a holder let go: the store reads again
                freshness.note_read()
        except StoreError as error:
            freshness.note_failure(error)
            moved = False
        except PcmemError:
            return
        # after another failure (a damaged block under one scope's list: the heads read well) only the screen's own
        # read tells whether it mends, and counts towards giving up when it does not
        if moved or was_stale:
            self.call_from_thread(self._refresh_visible)
        self.call_from_thread(self._show_store_state)

    def _show_store_state(self) -> None:
        self.screen.post_message(StoreStateChanged())

    def _refresh_visible(self) -> None:
        if isinstance(self.screen, StoreScreen):  # the screens below reload when they come back (on_screen_resume)
            self.screen.refresh_from_store()

    def action_back_or_quit(self) -> None:
        if isinstance(self.screen, ScopesScreen) or self.session is None:
            self._quit_or_say_drafts()
        elif isinstance(self.screen, ModalScreen):
            return  # a dialog owns its keys (typing q into a text field must not close it)
        else:
            self.pop_screen()

    #: Whether quitting has said what becomes of the kept drafts (said once: the next q quits).
    _drafts_said = False

    async def action_quit(self) -> None:
        self._quit_or_say_drafts()

    def _quit_or_say_drafts(self) -> None:
        """``q`` on the scopes screen. With drafts kept, the first ``q`` says where they stay (or that they go, when
        they could not be saved) and the second quits."""
        if not self.drafts or self._drafts_said:
            self.exit()
            return
        self._drafts_said = True
        kept = ", ".join(describe(key) for key in self.drafts.keys()[:3])
        more = f" and {len(self.drafts) - 3} more" if len(self.drafts) > 3 else ""
        if self.drafts.unsaved is None:
            text = f"kept drafts ({kept}{more}) stay for the next start, in {self.drafts.file} · q again quits"
            self.notify(text, title="pcmem", severity="information", timeout=10)
        else:
            text = f"kept drafts ({kept}{more}) will be lost: {self.drafts.unsaved} · q again quits"
            self.notify(text, title="pcmem", severity="warning", timeout=10)

    def on_work_failed(self, message: WorkFailed) -> None:
        if message.retry:
            self.query_one("#opening", Static).update(Text(f"◷ {message.text}\n\nretrying every second · q quits",
                                                           style="bold yellow"))
            self.set_timer(self.OPEN_RETRY, lambda: self.open_store(self._source))
            return
        self.query_one("#opening", Static).update(Text(f"✗ {message.text}\n\nq quits.", style="bold red"))

    def action_cancel_or_copy(self) -> None:
        if isinstance(self.screen, StoreScreen) and self.screen.cancel_work():
            return
        focused = self.focused
        if focused is not None and hasattr(focused, "action_copy"):
            focused.action_copy()
        else:
            self.action_help_quit()

    def on_unmount(self) -> None:
        self._notices.detach()
        garbage.release()
        if self.session is not None:
            self.session.close()
        self._restore_signal_handlers()

    def _quit_on_stop_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may handle signals (an app run in a test's thread)
        loop = asyncio.get_running_loop()
        for number in self.STOP_SIGNALS:
            self._signal_handlers[number] = signal.getsignal(number)
            try:
                loop.add_signal_handler(number, self.exit)
            except NotImplementedError:  # Windows' event loops: a plain handler hands the exit to the loop
                signal.signal(number, lambda *_: loop.call_soon_threadsafe(self.exit))
        if hasattr(signal, "SIGTSTP"):  # ctrl+z and `kill -TSTP` from outside: hand the store on, then stop
            self._signal_handlers[signal.SIGTSTP] = signal.getsignal(signal.SIGTSTP)
            loop.add_signal_handler(signal.SIGTSTP, self._on_sigtstp)

    def _restore_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for number, previous in self._signal_handlers.items():
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(number)
            signal.signal(number, previous)
        self._signal_handlers.clear()

    #: Seconds a suspend waits for store calls under way to end (a stopped process inside a transaction would keep
    #: the file from the others), before it stops anyway and says so.
    SUSPEND_WAITS_FOR_CALLS = 3.0
    _suspending = False

    def _on_sigtstp(self) -> None:
        if not self._suspending:
            self.call_later(self.action_suspend_to_shell)

    async def action_suspend_to_shell(self) -> None:
        """ctrl+z (or SIGTSTP from outside): to the shell like any terminal program (``fg`` comes back). As the
        store's owner the TUI first releases the store, so agents and the CLI go on without it (one of them owns it
        meanwhile), after the store calls under way end; on return it opens the store again, as the owner or a
        client of whoever took it."""
        if self._driver is None or not self._driver.can_suspend or not hasattr(signal, "SIGTSTP"):
            self.notify("this terminal cannot suspend the TUI", title="pcmem", severity="warning")
            return
        self._suspending = True
        try:
            said = self.session.hand_on() if self.session is not None else "no store open"
            if not await self._store_calls_ended(self.SUSPEND_WAITS_FOR_CALLS):
                said += f"; a store call was still running after {self.SUSPEND_WAITS_FOR_CALLS:.0f} s: the file may " \
                        "stay held until fg"
            self._stop_until_continued(said)
        finally:
            self._suspending = False

    async def _store_calls_ended(self, seconds: float) -> bool:
        """Wait (the event loop running: workers may be handing results back) until no worker that reads or writes
        the store is running; whether that happened within ``seconds``."""
        deadline = time.monotonic() + seconds
        while any(worker.is_running and worker.group != "embedder" for worker in self.workers):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    def _stop_until_continued(self, said: str) -> None:
        loop = asyncio.get_running_loop()
        with self.suspend():  # the terminal as it was before the app started; redrawn when this block ends
            print(f"pcmem tui: stopped; {said}. fg brings it back.", file=sys.__stderr__, flush=True)
            handler = self._signal_handlers.get(signal.SIGTSTP)
            loop.remove_signal_handler(signal.SIGTSTP)  # the default action (stop), as the shell expects
            os.kill(os.getpid(), signal.SIGTSTP)
            if handler is not None:
                loop.add_signal_handler(signal.SIGTSTP, self._on_sigtstp)
        if self.session is not None:
            self.session.resume()
            self.notify(f"back from ctrl+z: {said}", title="pcmem", timeout=6)
            self.resume_store(self.session)

    @work(thread=True, group="watch")
    def resume_store(self, session: Session) -> None:
        """After a suspend: open the store again (the first read does), show what changed meanwhile, and warm the
        embedder again when this process owns the store (and so runs searches) once more."""
        try:
            session.heads_moved()
            session.freshness.note_read()
        except StoreError as error:
            session.freshness.note_failure(error)
        except PcmemError:
            return
        self.call_from_thread(self._refresh_visible)
        self.call_from_thread(self._show_store_state)
        session.embedder_loading = session.embedder_to_load()
        if session.embedder_loading:
            self.call_from_thread(self.warm_embedder, session)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(type(self.screen)))


def make_app(
    source: SyncRuntime | str | Path,
    *,
    model: str | None = None,
    inference: InferenceConfig | None = None,
    editor: str | None = None,
    **open_options: Any,
) -> PcmemApp:
    """The app on an open runtime (the caller closes it) or on a store path (opened and closed by the app).

    ``model`` (``provider:name``) enables the model rerank policies; without it the environment's
    ``POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL`` applies. ``editor``: the command line ``o`` opens an entry's
    text with (``pcmem tui`` passes ``$VISUAL``/``$EDITOR``). ``open_options`` go to :func:`pcmem.open`.
    """
    inference = inference or InferenceConfig.from_env(generation_model=model)
    return PcmemApp(source, inference, open_options, editor)
