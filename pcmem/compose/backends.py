"""Open a storage backend from a store target: a file path (a DuckDB file, the default) or a URL whose scheme names
its engine (``seekdb://...``).

>>> open_backend("memory.duckdb")                                  # doctest: +SKIP  (the single-file default)
>>> open_backend("duckdb:///var/lib/pcmem/memory.duckdb")          # doctest: +SKIP  (the same, by its scheme)
>>> open_backend("seekdb:///var/lib/pcmem/seekdb")                 # doctest: +SKIP  (embedded seekdb)
>>> open_backend("seekdb://pcmem:secret@ob.example:2881/pcmem?tenant=app")  # doctest: +SKIP  (server/cluster)

The engine a target names, and everything about the store around its backend, is the engine object's (see
:mod:`pcmem.store.engines`): nothing here knows an engine by name.
"""

from __future__ import annotations

from pcmem.store import engines
from pcmem.store.engine import StoreTarget
from pcmem.store.engine_values import OpenOptions
from pcmem.store.port import StorageBackend

__all__ = ["StoreTarget", "open_backend"]


def open_backend(target: StoreTarget, *, lock_timeout: float = 10.0, create: bool = True,
                 index_lookups: bool = True) -> StorageBackend:
    """The backend for ``target`` (a path, a store URL, or a location its engine made): ``lock_timeout`` seconds of
    waiting for a store another process holds, ``create=False`` refusing a missing store (StoreMissingError),
    ``index_lookups=False`` reading around damaged index blocks (an engine takes what applies to it).

    A single-file store is opened once per process: every caller of one file gets a handle on the same backend (see
    :mod:`pcmem.store.held`), and the process closes it cleanly at exit even when nobody does
    (:mod:`pcmem.compose.exit`)."""
    location = engines.locate(target)
    engine = engines.engine_for(location)
    if engine.single_file:
        from pcmem.compose.exit import close_stores_at_exit

        close_stores_at_exit()  # a process that holds a store file exits cleanly, closed or not
    return engine.open(location, OpenOptions(lock_timeout, create, index_lookups))
