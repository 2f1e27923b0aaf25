"""Values a storage backend exchanges with the Memory and search services above it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import EntryState, EntryVersion, MemoryRef
from pcmem.types.search import Candidate


@dataclass(frozen=True, slots=True)
class EntryEvent:
    """What one revision did to one entry: the version it points at from now on, and the state."""

    entry_id: str
    entry_version_id: str
    state: EntryState


@dataclass(frozen=True, slots=True)
class HeadEntry:
    """An entry's standing at the head of its scope."""

    version: EntryVersion
    state: EntryState


@dataclass(frozen=True, slots=True)
class ChannelCandidates:
    """Both channels' candidates, read in one snapshot of one scope's head revision (``memory``)."""

    memory: MemoryRef | None
    fts: list[Candidate]
    vector: list[Candidate]
    versions: dict[str, EntryVersion] = field(default_factory=dict)  # every candidate's entry version, by id


@dataclass(frozen=True, slots=True)
class VectorStatus:
    """What decides vector availability for a scope, read in one snapshot."""

    memory: MemoryRef | None
    profile: EmbeddingProfile | None
    complete: bool  # every active head entry has a vector for ``profile``


@dataclass(frozen=True, slots=True)
class WriteRecord:
    """A write made with an idempotency key, as its own transaction recorded it: what the same write sent again is
    answered with (see :mod:`pcmem.memory.write_records`). Ids only: never an entry's text, kind, metadata or reason."""

    key: str
    scope: str
    #: ``remember``, ``revise``, ``retire``, ``reactivate``, ``forget`` or ``forget_scope``.
    operation: str
    #: sha256 (hex) of what the write asked, by ids.
    fingerprint: str
    #: The write's :class:`~pcmem.types.memory.WriteResult` as JSON, without the duplicates' texts.
    outcome: str
    #: When the write ran (the Memory's clock; UTC): records are kept for a while after it (see pcmem.store.common).
    recorded_at: datetime


@dataclass
class CheckReport:
    """What a check of a store found (``pcmem check``): problems, counts, and notes that are not problems."""

    problems: list[str] = field(default_factory=list)
    scopes: int = 0
    revisions: int = 0
    entry_versions: int = 0
    tombstones: int = 0  # forgotten entries (their ids remain, their content is erased)
    notes: list[str] = field(default_factory=list)  # facts worth knowing that are not problems
    damaged_blocks: list[int] = field(default_factory=list)  # storage blocks whose checksum fails
    log_copies: dict[str, int] = field(default_factory=dict)  # copies of the log next to the store: path -> bytes

    @property
    def ok(self) -> bool:
        return not self.problems
