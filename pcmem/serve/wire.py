"""PowerContext HTTP v1 wire models for the Memory endpoints, mirrored from ``openapi/powercontext.yaml``.

Names, fields, bounds and ``additionalProperties: false`` are PowerContext's, so its generated clients work against
pcmem and ``/openapi.json`` lists the same schema names. The field descriptions are written for the LLMs that read
them as MCP tool input schemas. Conversion to and from pcmem's own models lives in :mod:`pcmem.serve.convert`.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

#: PowerContext's artifact family of Memory artifacts.
MEMORY_FAMILY = "memory"

ScopeId = Annotated[str, Field(
    min_length=1, max_length=256, pattern=r".*\S.*",
    description="The application scope that owns the Memory, e.g. a project or user id. Not blank.",
)]
RefId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[\x21-\x7E]+$")]
Reason = Annotated[str | None, Field(
    default=None, max_length=512, description="Why this change is made (optional, for the audit trail).",
)]
EntryText = Annotated[str, Field(
    min_length=1, description="The entry text. Must not exceed 8192 UTF-8 bytes after normalization.",
)]
Kind = Annotated[str, Field(
    min_length=1, max_length=128, description="An open category such as fact, preference, decision or note.",
)]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemorySearchMode(str, Enum):
    auto = "auto"
    fts = "fts"
    vector = "vector"
    hybrid = "hybrid"


class MemoryUsedSearchMode(str, Enum):
    fts = "fts"
    vector = "vector"
    hybrid = "hybrid"


class MemoryMatchedBy(str, Enum):
    fts = "fts"
    vector = "vector"


class MemoryEntryState(str, Enum):
    active = "active"
    inactive = "inactive"


class EntryChangeOperation(str, Enum):
    add = "add"
    revise = "revise"
    deactivate = "deactivate"
    reactivate = "reactivate"


class ArtifactReference(_Wire):
    """One Memory artifact at one revision."""

    family: RefId
    artifact_id: RefId
    revision: int = Field(ge=1)


class MemoryCitation(_Wire):
    """The exact identity of one entry version in one Memory revision; copy it unchanged from a hit or entry."""

    memory_ref: ArtifactReference
    entry_id: RefId
    entry_version_id: RefId


class SourceReference(_Wire):
    name: str = Field(description="Stable Source type.")
    source_id: str


class MemoryEntry(_Wire):
    citation: MemoryCitation
    version: int = Field(ge=1)
    kind: str
    text: str
    state: MemoryEntryState
    source_refs: list[SourceReference]
    artifact_refs: list[ArtifactReference]


class SearchMemoryRequest(_Wire):
    scope_id: ScopeId
    query: str = Field(min_length=1, max_length=8192, description="What to look for, in natural language.")
    limit: int = Field(default=10, ge=1, le=50, description="Maximum number of hits (1..50).")
    mode: MemorySearchMode = Field(
        default=MemorySearchMode.auto,
        description="auto (hybrid when vectors are available, else full-text), fts, vector or hybrid. An explicit "
                    "mode the store cannot serve is an error, never a silent downgrade.",
    )


class SearchMemoryHit(_Wire):
    citation: MemoryCitation
    text: str
    score: float = Field(ge=0, le=1)
    matched_by: list[MemoryMatchedBy]


class SearchMemoryResponse(_Wire):
    memory: ArtifactReference | None = None
    mode: MemoryUsedSearchMode | None = None
    hits: list[SearchMemoryHit]


class RememberMemoryRequest(_Wire):
    scope_id: ScopeId
    kind: Kind
    text: EntryText
    reason: Reason
    expected_revision: int | None = Field(
        default=None, ge=1,
        description="Compare-and-swap: the write fails with revision_conflict unless this is the current head "
                    "revision. Omit to append unconditionally.",
    )


class MemoryMutationResponse(_Wire):
    memory: ArtifactReference
    entry: MemoryEntry | None = None


class ListMemoryEntriesRequest(_Wire):
    scope_id: ScopeId
    include_inactive: bool = Field(
        default=False, description="Include inactive entries from the current Memory head for explicit audit.",
    )


class ListMemoryEntriesResponse(_Wire):
    memory: ArtifactReference | None = None
    entries: list[MemoryEntry]


class GetMemoryEntryRequest(_Wire):
    scope_id: ScopeId
    citation: MemoryCitation


class ReviseMemoryEntryRequest(_Wire):
    scope_id: ScopeId
    citation: MemoryCitation = Field(
        description="The entry's citation at the current head revision (from list_memory_entries or a fresh "
                    "search). A citation of an older revision fails with revision_conflict.",
    )
    kind: Kind
    text: EntryText
    reason: Reason


class RetireMemoryEntryRequest(_Wire):
    scope_id: ScopeId
    citation: MemoryCitation = Field(
        description="The entry's citation at the current head revision. A citation of an older revision fails "
                    "with revision_conflict.",
    )
    reason: Reason


class ListMemoryChangesRequest(_Wire):
    scope_id: ScopeId
    since_revision: int | None = Field(
        default=None, ge=0,
        description="Exclusive lower bound; 0 requests complete history from Revision 1. Positive nonexistent "
                    "revisions are errors.",
    )


class EntryChange(_Wire):
    op: EntryChangeOperation
    entry_id: RefId
    from_entry_version_id: RefId | None
    to_entry_version_id: RefId | None
    reason: str | None


class MemoryRevisionChanges(_Wire):
    memory_ref: ArtifactReference
    changes: list[EntryChange]


class ListMemoryChangesResponse(_Wire):
    memory: ArtifactReference | None = None
    revisions: list[MemoryRevisionChanges]


class ErrorDetail(_Wire):
    code: str
    message: str
    details: dict[str, Any] | None


class ErrorResponse(_Wire):
    error: ErrorDetail
