"""PowerContext HTTP v1 wire models for the Memory endpoints, mirrored from PowerContext 1.4.1's OpenAPI document
(``tests/data/powercontext-1.4.1-memory.json``: the memory routes, health and capabilities).

Names, fields, bounds and ``additionalProperties: false`` are PowerContext's, so its generated clients work against
pcmem and ``/openapi.json`` lists the same schema names. The field descriptions are written for the LLMs that read
them as MCP tool input schemas. Conversion to and from pcmem's own models lives in :mod:`pcmem.serve.convert`.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from pcmem import validation

#: PowerContext's artifact family of Memory artifacts.
MEMORY_FAMILY = "memory"

#: Text fields carry pcmem's rule for control characters (pcmem.validation): tab, newline, CR, VT and FF are allowed,
#: every other C0/C1 control is refused. The schema says so, so a generated client never sends a value the server
#: answers 422 for; the library's validation enforces it (its message names the character and its position).
_CONTROL = validation.REFUSED_CONTROLS
_NO_CONTROLS: dict[str, Any] = {"pattern": validation.NO_CONTROLS_PATTERN}

ScopeId = Annotated[str, Field(
    min_length=1, max_length=256, pattern=r".*\S.*",
    json_schema_extra={"pattern": f"^[^{_CONTROL}]*[^\\s{_CONTROL}][^{_CONTROL}]*$"},
    description="The application scope that owns the Memory, e.g. a project or user id. Not blank; no control "
                "characters other than tab, newline, CR, VT and FF.",
)]
RefId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[\x21-\x7E]+$")]
Reason = Annotated[Annotated[str, Field(max_length=512, json_schema_extra=_NO_CONTROLS)] | None, Field(
    default=None,
    description="Why this change is made (optional, for the audit trail); /v1/memory/changes shows it.",
)]
EntryText = Annotated[str, Field(
    min_length=1, json_schema_extra=_NO_CONTROLS,
    description="The entry text. Must not exceed 8192 UTF-8 bytes after normalization; no control characters "
                "other than tab, newline, CR, VT and FF.",
)]
Kind = Annotated[str, Field(
    min_length=1, max_length=128, json_schema_extra=_NO_CONTROLS,
    description="An open category such as fact, preference, decision or note.",
)]
QueryText = Annotated[str, Field(
    min_length=1, max_length=8192, json_schema_extra=_NO_CONTROLS,
    description="What to look for, in natural language (no control characters other than tab, newline, CR, VT "
                "and FF).",
)]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=validation.NO_CONTROLS_PATTERN)]


class MemorySearchMode(str, Enum):
    auto = "auto"
    fts = "fts"
    vector = "vector"
    hybrid = "hybrid"


class MemoryUsedSearchMode(str, Enum):
    """PowerContext 1.4.1's name of the mode that ran (``text`` is full-text)."""

    text = "text"
    vector = "vector"
    hybrid = "hybrid"


class MemoryMatchedBy(str, Enum):
    text = "text"
    vector = "vector"


class AtomicMemoryState(str, Enum):
    active = "active"
    forgotten = "forgotten"
    merged = "merged"
    retired = "retired"


class TagMatch(str, Enum):
    all = "all"
    any = "any"


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
    revision: StrictInt = Field(ge=1)


class MemoryCitation(_Wire):
    """The exact identity of one entry version in one Memory revision; copy it unchanged from a hit or entry."""

    memory_ref: ArtifactReference
    entry_id: RefId
    entry_version_id: RefId


#: What names an entry version on the v1 routes: an exact citation, or a record's ``artifact`` (the entry id as
#: ``artifact_id`` and its version as ``revision``), so a client can act on a search hit or a listed record as is.
CitationRef = Annotated[MemoryCitation | ArtifactReference, Field(
    description="An exact citation {memory_ref, entry_id, entry_version_id}, or a record's artifact {family: "
                "\"memory\", artifact_id: <entry id>, revision: <entry version>} as search and list return it.",
)]


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


class TagFilter(_Wire):
    """Entries whose tags include all (or any) of these labels, compared after NFC + casefold."""

    tags: list[Tag] = Field(min_length=1, max_length=16)
    match: TagMatch = TagMatch.all


class AtomicMemoryRecord(_Wire):
    """One entry as PowerContext 1.4.1 reports it. pcmem: ``artifact`` is the entry (``artifact_id`` = entry id,
    ``revision`` = the entry's version), ``state_version`` the scope revision it was read at."""

    artifact: ArtifactReference
    kind: str = Field(min_length=1)
    text: str = Field(min_length=1)
    state: AtomicMemoryState
    state_version: int = Field(ge=0)
    merged_into_id: str | None


class SearchMemoryRequest(_Wire):
    tag_filter: TagFilter | None = None
    scope_id: ScopeId
    query: QueryText
    limit: StrictInt = Field(default=10, ge=1, le=50, description="Maximum number of hits (1..50).")
    mode: MemorySearchMode = Field(
        default=MemorySearchMode.auto,
        description="auto (hybrid when vectors are available, else full-text), fts, vector or hybrid. An explicit "
                    "mode the store cannot serve is an error, never a silent downgrade.",
    )


class AtomicMemorySearchHit(_Wire):
    memory: AtomicMemoryRecord
    score: float
    matched_by: list[MemoryMatchedBy]


class SearchMemoryResponse(_Wire):
    mode: MemoryUsedSearchMode
    hits: list[AtomicMemorySearchHit]


class RememberMemoryRequest(_Wire):
    scope_id: ScopeId
    kind: Kind
    text: EntryText
    reason: Reason
    expected_revision: StrictInt | None = Field(
        default=None, ge=1,
        description="Compare-and-swap: the write fails with revision_conflict unless this is the current head "
                    "revision. Omit to append unconditionally.",
    )


class MemoryMutationResponse(_Wire):
    changed: bool
    records: list[AtomicMemoryRecord]


class ListMemoryEntriesRequest(_Wire):
    tag_filter: TagFilter | None = None
    scope_id: ScopeId
    include_inactive: StrictBool = Field(default=False, description="Include retired and forgotten entries.")
    limit: StrictInt = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, min_length=1)


class ListMemoryEntriesResponse(_Wire):
    entries: list[AtomicMemoryRecord]
    next_cursor: str | None = None


class MemoryEntryTarget(_Wire):
    """A logical entry: the scope's Memory ``artifact_id`` (or the entry id itself, as a record's
    ``artifact.artifact_id`` gives it) and the entry id."""

    type: Literal["memory_entry"]
    family: Literal["memory"]
    artifact_id: str = Field(min_length=1, max_length=128)
    entry_id: str = Field(min_length=1, max_length=128)


class GetMemoryEntryRequest(_Wire):
    """Exactly one of ``citation`` (the exact version) or ``target`` (the entry as it stands at the head)."""

    scope_id: ScopeId
    citation: CitationRef | None = None
    target: MemoryEntryTarget | None = None

    @model_validator(mode="after")
    def _one_of(self) -> GetMemoryEntryRequest:
        if (self.citation is None) == (self.target is None):
            raise ValueError("give exactly one of citation or target")
        return self


class ReviseMemoryEntryRequest(_Wire):
    scope_id: ScopeId
    citation: CitationRef = Field(
        description="The entry version you read: a record's artifact (from search or list) or an exact citation. "
                    "Fails with revision_conflict if the entry changed since (writes to other entries do not matter).",
    )
    kind: Kind
    text: EntryText
    reason: Reason


class RetireMemoryEntryRequest(_Wire):
    scope_id: ScopeId
    citation: CitationRef = Field(
        description="The entry version you read: a record's artifact (from search or list) or an exact citation. "
                    "Fails with revision_conflict if the entry changed since.",
    )
    reason: Reason


class ListMemoryChangesRequest(_Wire):
    scope_id: ScopeId
    since_revision: StrictInt | None = Field(
        default=None, ge=0,
        description="Exclusive lower bound; 0 requests complete history from Revision 1; omitted, the head revision "
                    "only. Positive nonexistent revisions are errors.",
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


class FlushMemoryRequest(_Wire):
    scope_id: ScopeId


class FlushStatus(str, Enum):
    idle = "idle"
    processed = "processed"


class FlushMemoryResponse(_Wire):
    """pcmem writes synchronously and has no Source journal: a flush always finds nothing to process."""

    status: FlushStatus
    previous_cursor: int = Field(ge=0)
    current_cursor: int = Field(ge=0)
    high_watermark: int = Field(ge=0)
    processed_source_count: int = Field(ge=0)
    memory: ArtifactReference | None = None
    remaining_work: bool = False
    held_count: int = Field(default=0, ge=0)
    hold_codes: list[str] = Field(default_factory=list)


class GetMemoryCapacityRequest(_Wire):
    scope_id: ScopeId


class ReplaceArtifactTagsRequest(_Wire):
    tags: list[Tag] = Field(max_length=32)


class ArtifactTagSet(_Wire):
    scope_id: str
    target: MemoryEntryTarget
    tags: list[Tag] = Field(max_length=32)
    tag_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")


class ReadinessStatus(str, Enum):
    ready = "ready"
    degraded = "degraded"
    not_ready = "not_ready"


class ReadinessResponse(_Wire):
    status: ReadinessStatus
    checks: dict[str, str]


class Capabilities(_Wire):
    """What this server can do (PowerContext 1.4.1's shape; pcmem serves the Memory family only)."""

    source_types: list[str]
    artifact_families: list[str]
    memory_extraction: bool
    handoff_generation: bool
    search_modes: list[MemorySearchMode]
    context_versions: list[str]


class ErrorDetail(_Wire):
    code: str
    message: str
    details: dict[str, Any] | None


class ErrorResponse(_Wire):
    error: ErrorDetail
