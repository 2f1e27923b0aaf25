"""The values a storage engine's methods take and return (see :class:`pcmem.store.engine.StorageEngine`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcmem.errors import PcmemError
    from pcmem.types.embedding import EmbeddingProfile


@dataclass(frozen=True, slots=True)
class OpenOptions:
    """How a backend is opened (each engine takes what applies to it)."""

    #: Seconds to wait for a store another process holds before StoreLockedError.
    lock_timeout: float = 10.0
    #: ``False``: a missing store is StoreMissingError instead of being created.
    create: bool = True
    #: ``False``: read a file whose index blocks are damaged, every filter scanning its table (check, migrate).
    index_lookups: bool = True


@dataclass(frozen=True, slots=True)
class LogRecovery:
    """What a log recovery did: the complete transactions kept for replay, the bytes set aside, and the copy of the
    whole log as it was (``None``: nothing to recover)."""

    kept_transactions: int
    dropped_bytes: int
    copy: Path | None


@dataclass(frozen=True, slots=True)
class LeftoverLog:
    """A log a process left beside the store when it stopped without closing it (the next open replays it)."""

    path: Path
    #: Why the next open would refuse the log (not this store's, damaged), or ``None``: it replays whole.
    refused: PcmemError | None = None


@dataclass(frozen=True, slots=True)
class StoreHealth:
    """The light look ``pcmem doctor`` takes at a store nobody holds, reading it without changing anything."""

    #: Rows of pcmem's main tables by what they count (``scopes``, ``revisions``, ``entry_versions``); empty for a
    #: store pcmem has not set up yet.
    counts: dict[str, int]
    #: Migrations the next write applies (the store was made by an older pcmem).
    pending_migrations: list[str]
    #: Derived structures that are missing (``pcmem check --repair`` rebuilds them).
    missing: list[str]
    #: The embedding profile of the store's vectors, when one is set.
    profile: EmbeddingProfile | None
