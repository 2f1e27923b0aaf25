"""The DuckDB engine: a store is one local file (see :class:`pcmem.store.engine.StorageEngine`).

Light to import: its file concerns (:mod:`.files`, :mod:`.lock_probe`) use the standard library only, so a command
answered by another process's owner resolves the store and asks who holds it without loading DuckDB or numpy; the
backend, the log and the health look import DuckDB when they are used.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING

from pcmem.store import held
from pcmem.store.duckdb import files, lock_probe
from pcmem.store.engine import StoreLocation, StoreTarget

if TYPE_CHECKING:
    from pcmem.store.duckdb.backend import DuckDBBackend
    from pcmem.store.duckdb.staging import StagedFile
    from pcmem.store.engine_values import LeftoverLog, LogRecovery, OpenOptions, StoreHealth

#: The tables ``pcmem doctor`` counts, by what it calls them.
_COUNTED = (("scopes", "memories"), ("revisions", "revisions"), ("entry_versions", "entry_versions"))


class DuckDBEngine:
    """One DuckDB file per store, opened once per process and served by its owner to the user's other processes."""

    name = "duckdb"
    schemes: tuple[str, ...] = ("duckdb:",)
    single_file = True

    def locate(self, target: StoreTarget) -> StoreLocation:
        path = files.store_path(target)
        return StoreLocation(self.name, str(path), path, target=str(path))

    def open(self, location: StoreLocation, options: OpenOptions) -> DuckDBBackend:
        """The process's backend on the file: every runtime of one file shares one (see :mod:`pcmem.store.held`)."""
        from pcmem.store.duckdb.backend import DuckDBBackend

        path = _path(location)
        return held.acquire(lambda: _key(path), lambda: DuckDBBackend(
            path, resolved=True, lock_timeout=options.lock_timeout, create=options.create,
            index_lookups=options.index_lookups))

    def exists(self, location: StoreLocation) -> bool:
        return _path(location).exists()

    def identity(self, location: StoreLocation) -> tuple[int, int] | None:
        return files.file_identity(_path(location))

    def held_here(self, location: StoreLocation) -> bool:
        return held.holds(_key(_path(location)))

    def holder(self, location: StoreLocation) -> int | None:
        """Another process that holds DuckDB's lock on the file, or this process's own pid when it holds the file
        (then the system is not asked: closing any descriptor of the file would drop this process's own lock)."""
        if self.held_here(location):
            return os.getpid()
        return lock_probe.lock_holder(_path(location))

    def remove_new(self, location: StoreLocation) -> None:
        files.remove_store_files(_path(location))

    def stage(self, location: StoreLocation) -> StagedFile:
        from pcmem.store.duckdb import staging

        return staging.stage(_path(location))

    def damaged(self, location: StoreLocation) -> bool:
        """Whether blocks of the file fail their checksum (see :mod:`.blocks`); False for a file this process holds
        (its backend is what it is; ``check`` scans it from inside) and for one that cannot be read."""
        from pcmem.store.duckdb import blocks

        if self.held_here(location):
            return False
        try:
            return not blocks.scan(_path(location)).ok
        except OSError:
            return False

    def leftover_log(self, location: StoreLocation) -> LeftoverLog | None:
        from pcmem.errors import PcmemError
        from pcmem.store.duckdb import wal
        from pcmem.store.engine_values import LeftoverLog

        path = _path(location)
        log = files.wal_path(path)
        if not log.exists():
            return None
        try:
            wal.prepare_leftover_wal(path, read_only=True)  # reads and checks the log; changes nothing
        except PcmemError as refused:
            return LeftoverLog(log, refused)
        return LeftoverLog(log)

    def recover_log(self, location: StoreLocation) -> LogRecovery:
        from pcmem.store.duckdb import wal
        from pcmem.store.engine_values import LogRecovery

        done = wal.recover_wal(_path(location))
        return LogRecovery(done.kept_transactions, done.dropped_bytes, done.copy)

    def health(self, location: StoreLocation) -> StoreHealth:
        """pcmem's migrations, the counts and which derived structures exist, read without a write (the cheap part
        of ``pcmem check``)."""
        from pcmem.store.duckdb import check, connection, migrations, vectors
        from pcmem.store.engine_values import StoreHealth

        db = connection.connect(_path(location), read_only=True)
        try:
            pending = migrations.pending(db)
            initialised = len(pending) < len(migrations.MIGRATIONS)  # an empty file pcmem has not set up yet
            counts = {name: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                      for name, table in _COUNTED} if initialised else {}
            missing = [] if pending else check.missing_structures(db)
            profile = None if pending else vectors.profile(db)
        finally:
            db.close()
        return StoreHealth(counts=counts, pending_migrations=pending, missing=missing, profile=profile)

    def preload(self) -> None:
        import pcmem.store.duckdb.backend  # noqa: F401 - DuckDB and the engine, imported once per process


def _path(location: StoreLocation) -> Path:
    assert location.path is not None  # made by DuckDBEngine.locate: a file
    return location.path


def _key(path: Path) -> Hashable:
    """The file's identity (device, inode) when it exists, else its resolved path (see :mod:`pcmem.store.held`)."""
    return files.file_identity(path) or str(path)


#: The engine object :mod:`pcmem.store.engines` registers for ``duckdb:`` and plain paths.
ENGINE = DuckDBEngine()
