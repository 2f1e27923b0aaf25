"""Open a storage backend from a store target: a DuckDB file path (the default) or a ``seekdb:`` connection string.

>>> open_backend("memory.duckdb")                                  # doctest: +SKIP  (the single-file default)
>>> open_backend("seekdb:///var/lib/pcmem/seekdb")                 # doctest: +SKIP  (embedded seekdb)
>>> open_backend("seekdb://pcmem:secret@ob.example:2881/pcmem?tenant=app")  # doctest: +SKIP  (server/cluster)

The seekdb drivers are an optional extra (``pip install 'pcmem[seekdb]'``); without them a ``seekdb:`` target raises
ConfigurationError, and a DuckDB path never imports them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pcmem.errors import InputError, PcmemError
from pcmem.settings import SEEKDB_SCHEME
from pcmem.store.port import StorageBackend

if TYPE_CHECKING:
    from pcmem.store.duckdb.wal import WALRecovery

StoreTarget = str | os.PathLike[str]


def is_seekdb(target: StoreTarget) -> bool:
    return isinstance(target, str) and target.startswith(SEEKDB_SCHEME)


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
    if is_seekdb(target):
        from pcmem.store.seekdb import SeekdbBackend

        return SeekdbBackend(str(target), shared=shared, lock_timeout=lock_timeout)
    from pcmem.compose import registry
    from pcmem.store.duckdb import DuckDBBackend

    path = _duckdb_path(target)
    return registry.acquire(path, lambda: DuckDBBackend(path, shared=shared, lock_timeout=lock_timeout, create=create,
                                                        index_lookups=index_lookups))


def has_damaged_blocks(target: StoreTarget) -> bool:
    """Whether a DuckDB store file holds storage blocks whose checksum fails (see store.duckdb.blocks), asked before
    opening it; False for seekdb, for a file that cannot be read (opening it says why) and for a file this process
    holds already (its backend is what it is; ``check`` scans it from inside)."""
    if is_seekdb(target):
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
    """Refuse what is not a store target: another type, an empty string, a URL other than seekdb's (InputError)."""
    if not isinstance(target, (str, os.PathLike)):
        raise InputError(f"a store target is a path or a seekdb: URL, not {type(target).__name__}")
    if isinstance(target, str) and not target.strip():
        raise InputError("the store target is empty")
    if isinstance(target, str) and not is_seekdb(target):
        from pcmem.settings import refuse_non_local

        refuse_non_local(target)


def target_exists(target: StoreTarget) -> bool | None:
    """Whether the store exists: a file or an embedded data directory; ``None`` when only the server knows."""
    if is_seekdb(target):
        from pcmem.store.seekdb import parse

        parsed = parse(str(target))
        return parsed.path.is_dir() if parsed.path is not None else None
    return _duckdb_path(target).exists()


def remove_new_store(target: StoreTarget) -> None:
    """Delete a DuckDB store file (and its log) that this process created moments ago and could not finish setting
    up, so no later command adopts a half-made store. seekdb targets are left as they are."""
    if is_seekdb(target):
        return
    from pcmem.store.duckdb.files import remove_store_files

    remove_store_files(_duckdb_path(target))


def recover_wal(target: StoreTarget) -> WALRecovery:
    """Keep the complete transactions of a DuckDB store's damaged leftover log and set the rest aside in a copy
    (see :func:`pcmem.store.duckdb.wal.recover_wal`). seekdb keeps its own logs: CapabilityNotSupportedError."""
    if is_seekdb(target):
        from pcmem.errors import CapabilityNotSupportedError

        raise CapabilityNotSupportedError("--recover-wal works on DuckDB store files; seekdb recovers its own logs")
    from pcmem.store.duckdb.wal import recover_wal as recover

    return recover(_duckdb_path(target))
