"""A real uvicorn server in a background thread, on a free loopback port (``pcmem bench serve`` and the tests)."""

from __future__ import annotations

import threading
from types import TracebackType

from starlette.types import ASGIApp

LOOPBACK = "127.0.0.1"


class LiveServer:
    """``with LiveServer(app) as server: httpx.get(server.url + "/health/live")``."""

    def __init__(self, app: ASGIApp, *, startup_timeout: float = 60.0) -> None:
        import uvicorn

        config = uvicorn.Config(app, host=LOOPBACK, port=0, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="pcmem-live-server", daemon=True)
        self._startup_timeout = startup_timeout
        self.url = ""

    def start(self) -> LiveServer:
        self._thread.start()
        started = threading.Event()

        def wait() -> None:
            while not self._server.started and self._thread.is_alive():
                threading.Event().wait(0.01)
            started.set()

        threading.Thread(target=wait, daemon=True).start()
        if not started.wait(self._startup_timeout) or not self._server.started:
            self.stop()
            raise RuntimeError("the server did not start")
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{LOOPBACK}:{port}"
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
