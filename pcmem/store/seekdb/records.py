"""Row ↔ model conversions shared by the seekdb backend's reads and writes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from pcmem.types.embedding import EmbeddingProfile
from pcmem.errors import StoreError
from pcmem.types.memory import Citation, EntryVersion, MemoryEntry, MemoryRef

VERSION_FIELDS = (
    "entry_version_id", "entry_id", "version", "kind", "text", "content_hash", "metadata", "created_in_revision",
    "created_at",
)
V_COLUMNS = ", ".join(f"v.{name}" for name in VERSION_FIELDS)


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC)


def version_from_row(values: Sequence[Any]) -> EntryVersion:
    return EntryVersion(
        entry_version_id=values[0], entry_id=values[1], version=int(values[2]), kind=values[3], text=values[4],
        content_hash=values[5], metadata=json.loads(values[6]), created_in_revision=int(values[7]),
        created_at=utc(values[8]),
    )


def entry(memory: MemoryRef, state: str, version: EntryVersion) -> MemoryEntry:
    citation = Citation(artifact_id=memory.artifact_id, revision=memory.revision, entry_id=version.entry_id,
                        entry_version_id=version.entry_version_id)
    return MemoryEntry(citation=citation, state=state, entry=version)


def check_dimension(profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
    for version_id, vector in batch.items():
        if np.asarray(vector).reshape(-1).shape[0] != profile.dimension:
            raise StoreError(f"vector for {version_id} has {np.asarray(vector).size} dimensions, "
                             f"{profile.describe()} has {profile.dimension}")
