"""Messages that thread workers post back to the event loop (``post_message`` is thread-safe)."""

from __future__ import annotations

import threading
from typing import Any

from textual.message import Message


class Loaded(Message):
    """A store call finished; subclasses name what came back so each screen has one handler per result."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class StoreOpened(Loaded):
    """``value``: the :class:`~tui.session.Session` on the opened store."""


class ScopesLoaded(Loaded):
    """``value``: list of ScopeSummary."""


class ManifestLoaded(Loaded):
    """``value``: :class:`~pcmem_tui.manifests.Manifest`. ``drawn``, for a first page: set once the screen has
    drawn it (the worker reads the rest after that, so the first page's rows do not share the CPU with it)."""

    def __init__(self, value: Any, drawn: threading.Event | None = None) -> None:
        super().__init__(value)
        self.drawn = drawn


class RevisionsLoaded(Loaded):
    """``value``: list of RevisionInfo, oldest first."""


class RecentLoaded(Loaded):
    """``value``: list of :class:`~pcmem_tui.recent.RecentChange`, newest first."""


class EntryLoaded(Loaded):
    """``value``: :class:`~tui.session.EntryDetail`."""


class SearchDone(Loaded):
    """``value``: SearchPage."""


class Written(Loaded):
    """``value``: a :class:`~pcmem_tui.screens.dialogs.Outcome` (verb, WriteResult)."""


class WorkFailed(Message):
    """A store or model call raised a PcmemError; ``text`` is its readable message; ``retry``: the cause is expected
    to pass (another process holds the file), so the work is tried again by itself."""

    def __init__(self, text: str, *, retry: bool = False) -> None:
        super().__init__()
        self.text, self.retry = text, retry


class Progress(Message):
    """Long work advanced: ``stage`` with ``done`` of ``total`` (``total`` 0: unknown)."""

    def __init__(self, stage: str, done: int, total: int) -> None:
        super().__init__()
        self.stage, self.done, self.total = stage, done, total


class StoreStateChanged(Message):
    """The store was read (or failed to be): the status bar shows how current the data is."""


class EmbedderWarmed(Message):
    """The embedding model finished loading in the background (or failed to: see the session)."""
