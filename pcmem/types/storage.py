"""Values a storage backend exchanges with the Memory and search services above it."""

from __future__ import annotations

from dataclasses import dataclass, field

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
