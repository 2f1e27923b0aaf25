"""pcmem's own warnings shown in the TUI.

Why: the library says what it did on its own through :mod:`logging` (a write-ahead log set aside after a kill inside a
commit, a query embedding that failed so a search ran full text only, a store not served to other processes); the
CLI prints those lines on stderr, but a running Textual app owns the terminal and swallows what is written there, so
the TUI user never saw them. While the app runs, a handler on the ``pcmem`` logger turns each warning into a
notification (``App.notify`` is thread-safe: the store opens on a worker thread).
"""

from __future__ import annotations

import logging
from typing import Any

from textual.app import App

#: How long a warning stays on screen, in seconds: long enough to read a sentence that names a file.
SHOWN_FOR = 20.0


class Notices(logging.Handler):
    """Warnings (and worse) of the ``pcmem`` loggers as notifications of ``app``, between :meth:`attach` and
    :meth:`detach`."""

    def __init__(self, app: App[Any]) -> None:
        super().__init__(level=logging.WARNING)
        self._app = app
        self._logger = logging.getLogger("pcmem")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage().removeprefix("pcmem: ")
            self._app.notify(message, title="pcmem", severity="error" if record.levelno >= logging.ERROR
                             else "warning", timeout=SHOWN_FOR)
        except Exception:  # a notice must never break the operation that logged it
            self.handleError(record)

    def attach(self) -> None:
        self._logger.addHandler(self)

    def detach(self) -> None:
        self._logger.removeHandler(self)
