"""How ``pcmem serve`` and ``pcmem mcp`` stop: SIGTERM and SIGHUP close the store and exit 0.

Service managers (systemd, launchd, docker) and MCP hosts stop a server with SIGTERM, a closed terminal sends SIGHUP,
and Python's default for both is to die on the spot: the store is never closed and its write-ahead log is left for
the next process to replay. :class:`StopSignals` holds both signals for the whole command. The handler never raises:
an exception raised in a signal handler lands wherever the main thread is, and DuckDB turns one that lands inside a
query into ``RuntimeError: Query interrupted``. It records the signal, and what follows depends on the phase:

- opening the store and loading models (seconds): they finish, then the server stops before it serves anything;
- serving (:meth:`StopSignals.serving`): the server is asked to stop; requests in flight get :data:`GRACE_SECONDS`
  to be answered, then they are cancelled;
- closing (:meth:`StopSignals.closing`), and after the first signal: further signals are ignored, so a second
  SIGTERM cannot cut the final checkpoint short.

Ctrl-C (SIGINT) keeps its meaning: interrupted, exit 130. ``pcmem mcp`` takes it through the same phases
(``StopSignals(interrupt=True)``) and ends as an interrupt once the store is closed: left to Python, the
KeyboardInterrupt (or asyncio's cancel of the main task) lands wherever the event loop is, and a cancel that lands in
the MCP SDK's stream handling could be absorbed, leaving a silent host's server running.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import Any

#: SIGTERM, SIGHUP where the system has it (Windows does not: there a console's Ctrl-Break, SIGBREAK, stands in).
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGBREAK") if hasattr(signal, name))
#: How long requests in flight may run after a stop signal before they are cancelled (``docker stop`` kills after
#: 10 s, systemd after 90 s; a store call takes milliseconds, a local rerank is bounded by its own timeout).
GRACE_SECONDS = 3
#: How often a serving event loop wakes to run Python's signal handlers: a signal delivered to another thread (a
#: store or stdin thread) only sets a flag the main thread reads when it runs, and an idle loop sleeps in select.
SIGNAL_POLL_SECONDS = 0.1


class StopSignals:
    """``with StopSignals() as stops:`` around a server command; see the module docstring for the phases."""

    def __init__(self, *, interrupt: bool = False) -> None:
        #: The signals held: the stop signals, and SIGINT too with ``interrupt``.
        self.numbers = (*STOP_SIGNALS, signal.SIGINT) if interrupt else STOP_SIGNALS
        self._on_stop: Callable[[], object] | None = None
        self._closing = False
        self._previous: dict[int, Any] = {}
        #: The stop signal that arrived (None: none yet).
        self.received: int | None = None

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
            self._previous = {number: signal.signal(number, self._handle) for number in self.numbers}
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self._closing or self.received is not None:
            return
        self.received = number
        if self._on_stop is not None:
            self._on_stop()

    @contextlib.contextmanager
    def serving(self, on_stop: Callable[[], object]) -> Iterator[None]:
        """While the block runs, a stop signal calls ``on_stop`` (in the signal handler, on the main thread: it may
        only set a flag or schedule work on the loop); a signal that came while the server started calls it at once.
        When the block ends the command is closing."""
        self._on_stop = on_stop
        if self.received is not None:
            on_stop()
        try:
            yield
        finally:
            self.closing()

    def interrupted(self) -> bool:
        """The stop came from SIGINT (Ctrl-C): the command ends as an interrupt (exit 130) after closing."""
        return self.received == signal.SIGINT

    def closing(self) -> None:
        """From now on the command closes the store: stop signals are ignored."""
        self._closing = True
