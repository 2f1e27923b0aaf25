"""``pcmem serve``'s uvicorn server: stops on SIGTERM and SIGHUP like on Ctrl-C, but returns instead of dying.

uvicorn stops gracefully on SIGINT and SIGTERM and then raises the signal again, so the process dies of it (exit
143) before the caller can close the store. Here the stop signals go through :class:`~pcmem.serve.shutdown.StopSignals`
(graceful stop, then a normal return: the caller closes the store, exit 0); Ctrl-C keeps uvicorn's graceful stop and
ends as an interrupt (KeyboardInterrupt: exit 130).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from pcmem.serve.shutdown import GRACE_SECONDS, StopSignals


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, stops: StopSignals, on_listening: Callable[[str], None]) -> None:
        super().__init__(config)
        self._stops = stops
        self._on_listening = on_listening
        self._interrupted = False

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.servers:
            return
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        self._on_listening(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")

    def _interrupt(self, number: int, frame: FrameType | None) -> None:
        self._interrupted = True
        self.handle_exit(number, frame)  # a second Ctrl-C forces the exit, as in uvicorn

    def _stop(self) -> None:
        self.should_exit = True  # uvicorn's main loop looks every 0.1 s

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # replaces uvicorn's (see the module docstring)
        previous = signal.signal(signal.SIGINT, self._interrupt)
        try:
            with self._stops.serving(self._stop):
                yield
        finally:
            signal.signal(signal.SIGINT, previous)
        if self._interrupted:
            raise KeyboardInterrupt


def run_http(app: ASGIApp, host: str, port: int, stops: StopSignals, on_listening: Callable[[str], None]) -> None:
    """Serve ``app`` until a stop signal or Ctrl-C; ``on_listening(url)`` runs once the socket listens (``port=0``
    picks a free one). Requests in flight at a stop get GRACE_SECONDS to finish, then they are cancelled."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on",
                            server_header=False, timeout_graceful_shutdown=GRACE_SECONDS)
    _Server(config, stops, on_listening).run()
