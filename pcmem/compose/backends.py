"""Open a storage backend from a store target: a DuckDB file path (the default) or a seekdb connection string.

>>> open_backend("memory.duckdb")                                  # doctest: +SKIP  (the single-file default)
>>> open_backend("duckdb:///var/lib/pcmem/memory.duckdb")          # doctest: +SKIP  (the same, by its scheme)
>>> open_backend("seekdb:///var/lib/pcmem/seekdb")                 # doctest: +SKIP  (embedded seekdb)
>>> open_backend("seekdb://pcmem:secret@ob.example:2881/pcmem?tenant=app")  # doctest: +SKIP  (server/cluster)

Which engine a target names is decided once, by its URL scheme (:data:`pcmem.settings.STORE_SCHEMES`); the engines
are registered here by name (:data:`ENGINES`), each with what pcmem does with its targets. The seekdb drivers are an
optional extra (``pip install 'pcmem[seekdb]'``); without them a seekdb target raises ConfigurationError, and a
DuckDB path never imports them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pcmem.errors import InputError, PcmemError
from pcmem.settings import StoreEngine, store_engine
from pcmem.store.port import StorageBackend

if TYPE_CHECKING:
    from pcmem.store.duckdb.wal import WALRecovery

StoreTarget = str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class OpenOptions:
    """How :func:`open_backend` was asked to open a store (each engine takes what applies to it)."""

    shared: bool
    lock_timeout: float
    create: bool
    index_lookups: bool


@dataclass(frozen=True, slots=True)
class Engine:
    """One storage engine as the composition root uses it."""

    name: StoreEngine
    #: A single local file, opened once per process and served by its owner to other processes (see
    #: :mod:`pcmem.compose.owned`), checked, staged and recovered as a file; False for a database an engine manages.
    local_file: bool
    open: Callable[[StoreTarget, OpenOptions], StorageBackend]
    #: Whether the store exists; ``None`` when only a server knows.
    exists: Callable[[StoreTarget], bool | None]


def _open_duckdb(target: StoreTarget, options: OpenOptions) -> StorageBackend:
    from pcmem.compose import registry
    from pcmem.compose.exit import close_stores_at_exit
    from pcmem.store.duckdb import DuckDBBackend

    close_stores_at_exit()  # a process that holds a store file exits cleanly, closed or not
    path = _duckdb_path(target)
    return registry.acquire(path, lambda: DuckDBBackend(
        path, shared=options.shared, lock_timeout=options.lock_timeout, create=options.create,
        index_lookups=options.index_lookups))


def _open_seekdb(target: StoreTarget, options: OpenOptions) -> StorageBackend:
    from pcmem.store.seekdb import SeekdbBackend

    return SeekdbBackend(os.fspath(target), shared=options.shared, lock_timeout=options.lock_timeout)


def _seekdb_exists(target: StoreTarget) -> bool | None:
    from pcmem.store.seekdb import parse

    parsed = parse(os.fspath(target))
    return parsed.path.is_dir() if parsed.path is not None else None


#: The engines by the name :data:`pcmem.settings.STORE_SCHEMES` maps each scheme to.
ENGINES: dict[StoreEngine, Engine] = {
    "duckdb": Engine("duckdb", local_file=True, open=_open_duckdb, exists=lambda target: _duckdb_path(target).exists()),
    "seekdb": Engine("seekdb", local_file=False, open=_open_seekdb, exists=_seekdb_exists),
}


def engine_for(target: StoreTarget) -> Engine:
    """The engine ``target`` names (StoreSchemeError for a scheme none is registered for, listing the known ones)."""
    return ENGINES[store_engine(target)]


def is_local_file(target: StoreTarget) -> bool:
    """Whether ``target`` is a DuckDB store file (the engines that are not files manage their own storage)."""
    return engine_for(target).local_file


def open_backend(
    target: StoreTarget, *, shared: bool = False, lock_timeout: float = 10.0, create: bool = True,
    index_lookups: bool = True,
) -> StorageBackend:
    """The backend for ``target``; ``shared``/``lock_timeout``/``index_lookups`` as for
    :class:`~pcmem.store.duckdb.DuckDBBackend` (seekdb ignores ``index_lookups``).

    A DuckDB file is opened once per process: every caller of one path gets a handle on the same backend (see
    :mod:`pcmem.compose.registry`). ``create=False`` refuses a missing store (StoreMissingError) instead of creating it.
    """
    check_target(target)
    return engine_for(target).open(target, OpenOptions(shared, lock_timeout, create, index_lookups))


def has_damaged_blocks(target: StoreTarget) -> bool:
    """Whether a DuckDB store file holds storage blocks whose checksum fails (see store.duckdb.blocks), asked before
    opening it; False for a store that is not a file, for a file that cannot be read (opening it says why) and for a file this process
    holds already (its backend is what it is; ``check`` scans it from inside)."""
    if not is_local_file(target):
        return False
    from pcmem.compose import registry
    from pcmem.store.duckdb import blocks

    try:
        path = _duckdb_path(target)
    except PcmemError:
        return False  # opening it says why
    if registry.holds(path):
        return False
    try:
        return not blocks.scan(path).ok
    except OSError:
        return False


def _duckdb_path(target: StoreTarget) -> Path:
    """The DuckDB store file ``target`` names, resolved once (see :func:`pcmem.store.duckdb.files.store_path`)."""
    from pcmem.store.duckdb.files import store_path

    return store_path(target)


def check_target(target: StoreTarget) -> None:
    """Refuse what is not a store target: another type, an empty string (InputError), a URL of no registered engine
    (StoreSchemeError)."""
    if not isinstance(target, (str, os.PathLike)):
        raise InputError(f"a store target is a path or a store URL, not {type(target).__name__}")
    if isinstance(target, str) and not target.strip():
        raise InputError("the store target is empty")
    if isinstance(target, str) and is_local_file(target):
        _duckdb_path(target)  # refuses what no DuckDB file can be (a nested URL, ``:memory:``, ``file:``)


def target_exists(target: StoreTarget) -> bool | None:
    """Whether the store exists: a file or an embedded data directory; ``None`` when only the server knows."""
    return engine_for(target).exists(target)


def remove_new_store(target: StoreTarget) -> None:
    """Delete a DuckDB store file (and its log) that this process created moments ago and could not finish setting
    up, so no later command adopts a half-made store. Stores that are not files are left as they are."""
    if not is_local_file(target):
        return
    from pcmem.store.duckdb.files import remove_store_files

    remove_store_files(_duckdb_path(target))


def recover_wal(target: StoreTarget) -> WALRecovery:
    """Keep the complete transactions of a DuckDB store's damaged leftover log and set the rest aside in a copy
    (see :func:`pcmem.store.duckdb.wal.recover_wal`). seekdb keeps its own logs: CapabilityNotSupportedError."""
    if not is_local_file(target):
        from pcmem.errors import CapabilityNotSupportedError

        raise CapabilityNotSupportedError("--recover-wal works on DuckDB store files; seekdb recovers its own logs")
    from pcmem.store.duckdb.wal import recover_wal as recover

    return recover(_duckdb_path(target))
