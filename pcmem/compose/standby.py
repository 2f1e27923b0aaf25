"""A client's standby: what a process loads ahead so that taking the store over costs a file open, not a model load.

A client of another process's owner loads neither DuckDB nor a model (a one-shot command never should). A long-lived
client — ``pcmem mcp`` or ``pcmem serve`` beside another owner, a desktop app — calls
:meth:`pcmem.SyncRuntime.prepare_takeover`: after :data:`PREPARE_AFTER` seconds (the first calls of a process just
started keep the CPU; a process that exits meanwhile loads nothing) a background thread imports the storage engine
and loads the store's embedding model, the one the owner's greeting named. Each step is one native call (see
:mod:`pcmem.native_calls`): an exit during it waits for that step only, then nothing more starts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from pcmem import native_calls
from pcmem.compose.exit import close_stores_at_exit
from pcmem.embedding.port import EmbeddingProfile

#: Seconds a client waits before it prepares to take the store over.
PREPARE_AFTER = 3.0


def start(closing: threading.Event, preload: Callable[[], None], profile: dict[str, Any] | None,
          embedder: str | None) -> None:
    """Prepare in a background thread (see the module docstring) until ``closing`` is set. ``preload``: the storage
    engine's (:meth:`pcmem.store.engine.StorageEngine.preload`); ``profile``: the store's embedding profile as the
    owner's greeting said (JSON); ``embedder``: the client's choice as it sends it."""
    close_stores_at_exit()  # arms the exit's wait for the step under way
    threading.Thread(target=_prepare, args=(closing, preload, profile, embedder), name="pcmem-takeover-standby",
                     daemon=True).start()


def _prepare(closing: threading.Event, preload: Callable[[], None], profile: dict[str, Any] | None,
             embedder: str | None) -> None:
    if closing.wait(PREPARE_AFTER):
        return
    with contextlib.suppress(Exception):  # only a head start: the take-over loads whatever is missing
        for step in (preload, lambda: _warm_embedder(profile, embedder)):
            if closing.is_set() or native_calls.draining():
                return
            with native_calls.native_call():
                step()


def _warm_embedder(profile: dict[str, Any] | None, choice: str | None) -> None:
    from pcmem.compose.embedders import named_embedder, profile_embedder

    if choice == "auto":
        embedder = None if profile is None else profile_embedder(EmbeddingProfile(**profile))
    else:
        embedder = None if choice is None else named_embedder(choice)
    if embedder is not None:
        embedder.embed_query("warm up")
