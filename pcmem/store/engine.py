"""A storage engine as the layers above the storage port use it: one object per engine that owns what pcmem does with
a store *around* its backend — where a target points, whether the store is there, who holds it, creating and
removing it, staging a copy for ``pcmem migrate``, its log, and the light look ``pcmem doctor`` takes.

The composition root and the command line ask the engine of a target (:func:`pcmem.store.engines.engine_for`) and
never import an engine's package: a new engine is its own package, an object implementing :class:`StorageEngine`
and one registration (see :mod:`pcmem.store.engines`).

An engine that cannot do something says so with a typed error (CapabilityNotSupportedError), never a silent no-op,
except where "nothing to do" is the true answer (a database server has no log beside it to look at). The values some
methods take or return are in :mod:`pcmem.store.engine_values` (imported when those run: a cold command that asks
another process's owner builds none of them).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pcmem.store.engine_values import LeftoverLog, LogRecovery, OpenOptions, StoreHealth
    from pcmem.store.port import StorageBackend

#: What a store is named by: a file path, or a URL whose scheme names its engine (``seekdb://...``).
StoreTarget = str | os.PathLike[str]


class StoreLocation:
    """Where a store is, as its engine resolved the target — once: every later step (the open, the owner's address,
    the lock probe, the log) uses this, so a symlink, a ``~`` or a relative name is resolved one time only.

    A location is path-like: it can be handed back to ``pcmem.open`` and to :func:`pcmem.store.engines.locate`,
    which return it as it is. Two locations are equal when they name one store of one engine. (A plain class, not a
    dataclass: a cold command that only asks another process's owner builds it, and a dataclass costs it compiles.)
    """

    __slots__ = ("engine", "shown", "path", "parsed", "target")

    def __init__(self, engine: str, shown: str, path: Path | None = None, *, parsed: object = None,
                 target: str = "") -> None:
        #: The name of the engine that made it (``"duckdb"``).
        self.engine = engine
        #: How messages name the store: the resolved file, or the URL without its password.
        self.shown = shown
        #: The store's local file, resolved; ``None`` for a store that is not one file of this machine.
        self.path = path
        #: What the engine parsed the target into (opaque above the engine: a seekdb URL's parts).
        self.parsed = parsed
        #: A target that names this store again, for another process or a later call (a URL keeps its password
        #: here, never in :attr:`shown`).
        self.target = target

    def __fspath__(self) -> str:
        return self.target or self.shown

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"StoreLocation({self.engine!r}, {self.shown!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoreLocation):
            return NotImplemented
        return (self.engine, self.shown, self.path) == (other.engine, other.shown, other.path)

    def __hash__(self) -> int:
        return hash((self.engine, self.shown, self.path))


@runtime_checkable
class StagedCopy(Protocol):
    """A copy ``pcmem migrate`` writes under a temporary name and puts in place only when it is complete."""

    #: Where the copy is written (open the destination backend here).
    partial: StoreLocation
    #: A partial copy an interrupted run left there was removed first.
    removed_leftover: bool

    def publish(self) -> None:
        """Put the complete, closed copy in place (StoreError when someone changed the destination meanwhile)."""

    def discard(self) -> None:
        """Remove the partial copy after a failed copy."""


@runtime_checkable
class StorageEngine(Protocol):
    """One storage engine: its backends and what pcmem does with its stores around them."""

    #: The engine's name, as :attr:`StoreLocation.engine` carries it.
    name: str
    #: The URL schemes that name this engine's stores, lower case with their colon (``"seekdb:"``).
    schemes: tuple[str, ...]
    #: The store is one local file, opened once per process: the process that holds it serves it to the user's other
    #: pcmem processes (:mod:`pcmem.owner`), and it is checked, staged and recovered as a file. False for a database
    #: the engine manages (its server serves every process).
    single_file: bool

    def locate(self, target: StoreTarget) -> StoreLocation:
        """Resolve ``target`` once (InputError for what cannot name a store of this engine; nothing is created)."""

    def open(self, location: StoreLocation, options: OpenOptions) -> StorageBackend:
        """A backend on the store (creating it unless ``options.create`` is False: StoreMissingError then)."""

    def exists(self, location: StoreLocation) -> bool | None:
        """Whether the store exists; ``None`` when only a server knows."""

    def identity(self, location: StoreLocation) -> tuple[int, int] | None:
        """What every name of the store shares (a file's device and inode), or ``None`` (not there yet, or not a
        file): two names of one file must find one backend and one owner."""

    def held_here(self, location: StoreLocation) -> bool:
        """Whether this process has the store open already (every runtime of it shares that backend)."""

    def holder(self, location: StoreLocation) -> int | None:
        """The pid of the process that holds the store (0 when the system does not say which; this process's own
        when :meth:`held_here`), else ``None``. Asked without taking or releasing anything."""

    def remove_new(self, location: StoreLocation) -> None:
        """Delete a store this process created moments ago and could not finish setting up, so no later command
        adopts a half-made store (a no-op for a store the engine manages)."""

    def stage(self, location: StoreLocation) -> StagedCopy | None:
        """Prepare a copy into ``location`` under a temporary name (``None``: the engine writes it in place).
        StoreLockedError while another process holds the destination or writes a copy of it."""

    def damaged(self, location: StoreLocation) -> bool:
        """Whether the store's storage holds blocks whose checksum fails, asked before opening it (False when the
        engine keeps its own integrity, or the store cannot be read: opening it says why)."""

    def leftover_log(self, location: StoreLocation) -> LeftoverLog | None:
        """The log a process left beside the store when it stopped without closing it, or ``None`` (also for an
        engine that replays its own logs). Reads it, changes nothing."""

    def recover_log(self, location: StoreLocation) -> LogRecovery:
        """Keep the complete transactions of a damaged leftover log and set the rest aside in a copy
        (CapabilityNotSupportedError for an engine that recovers its own logs)."""

    def health(self, location: StoreLocation) -> StoreHealth:
        """A read-only look at a store nobody holds (CapabilityNotSupportedError for an engine doctor cannot look
        into; a typed StoreError for a store that cannot be read)."""

    def preload(self) -> None:
        """Import the engine's driver now (a client that may take the store over loads it ahead)."""


def holder_of(engine: StorageEngine, location: StoreLocation) -> Callable[[], int | None]:
    """``engine.holder(location)`` as a function of nothing (what :mod:`pcmem.owner` asks while it waits)."""
    return lambda: engine.holder(location)
