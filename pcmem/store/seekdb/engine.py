"""The seekdb engine: a store is a database of OceanBase seekdb — embedded in this process on a data folder, or on a
server (see :mod:`.connector` for the URLs). The engine keeps its own files, logs and integrity, and a server serves
every process: most of a file's concerns (an owner, a lock holder, a staged copy, log recovery, doctor's look) do
not apply, and say so.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pcmem.errors import CapabilityNotSupportedError
from pcmem.store.engine import StoreLocation, StoreTarget
from pcmem.store.engine_values import LeftoverLog, LogRecovery, OpenOptions, StoreHealth
from pcmem.store.seekdb.connector import SCHEMES, SeekdbTarget, parse

if TYPE_CHECKING:
    from pcmem.store.seekdb.backend import SeekdbBackend


class SeekdbEngine:
    """OceanBase seekdb, through the ``seekdb`` extra (the drivers load when a store is opened)."""

    name = "seekdb"
    schemes: tuple[str, ...] = SCHEMES
    single_file = False

    def locate(self, target: StoreTarget) -> StoreLocation:
        text = os.fspath(target)
        parsed = parse(text if isinstance(text, str) else text.decode())
        return StoreLocation(self.name, parsed.describe(), None, parsed=parsed, target=str(text))

    def open(self, location: StoreLocation, options: OpenOptions) -> SeekdbBackend:
        from pcmem.store.seekdb.backend import SeekdbBackend

        return SeekdbBackend(_parsed(location), lock_timeout=options.lock_timeout)

    def exists(self, location: StoreLocation) -> bool | None:
        parsed = _parsed(location)
        return parsed.path.is_dir() if parsed.path is not None else None

    def identity(self, location: StoreLocation) -> None:
        return None  # a database, not a file: no owner serves it

    def held_here(self, location: StoreLocation) -> bool:
        return False  # each runtime has its own backend (one embedded instance per process, shared by them)

    def holder(self, location: StoreLocation) -> None:
        return None  # embedded: pcmem's lock on the data folder refuses a second process when it opens

    def remove_new(self, location: StoreLocation) -> None:
        """A database seekdb made stays (its server manages it)."""

    def stage(self, location: StoreLocation) -> None:
        return None  # written in place: a database, not a file to rename

    def damaged(self, location: StoreLocation) -> bool:
        return False  # seekdb checks its own storage

    def leftover_log(self, location: StoreLocation) -> LeftoverLog | None:
        return None  # seekdb replays its own logs

    def recover_log(self, location: StoreLocation) -> LogRecovery:
        raise CapabilityNotSupportedError("--recover-wal works on DuckDB store files; seekdb recovers its own logs")

    def health(self, location: StoreLocation) -> StoreHealth:
        raise CapabilityNotSupportedError(f"{location} is a seekdb database: doctor looks into store files")

    def preload(self) -> None:
        import pcmem.store.seekdb.backend  # noqa: F401 - numpy and the SQL of the engine


def _parsed(location: StoreLocation) -> SeekdbTarget:
    assert isinstance(location.parsed, SeekdbTarget)  # made by SeekdbEngine.locate
    return location.parsed


#: The engine object :mod:`pcmem.store.engines` registers for ``seekdb:`` and ``oceanbase:``.
ENGINE = SeekdbEngine()
