"""The MCP tools' arguments and results: PowerContext's operations plus what an agent needs (keys, metadata,
per-entry compare-and-swap, erasure, paging, filters, several scopes, recent entries).

The HTTP v1 routes keep PowerContext's wire models (:mod:`pcmem.serve.wire`); the tools take a superset of their
arguments, under the same operation ids, and answer pcmem's richer entry (state, version, metadata, created time)
so an agent can act on a result without another read. Field descriptions are written for the model that reads
them. Values are checked again by pcmem's own request models (a bad one is an ``invalid_request`` tool error).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pcmem.serve import wire

#: Default page of ``list_memory_entries``: 50 entries of a few hundred characters each stay well under 8k tokens.
DEFAULT_LIST_LIMIT = 50
#: Default number of ``list_recent_memory`` entries.
DEFAULT_RECENT_LIMIT = 20
#: Scopes one search or recent-entries call may read.
MAX_SCOPES = 10

ExpectedVersion = Annotated[int | None, Field(
    default=None, ge=1,
    description="Per-entry compare-and-swap (recommended): the entry's `version` as you read it. The write fails "
                "with revision_conflict only if THIS entry changed since; writes to other entries do not matter.",
)]
ExpectedRevision = Annotated[int | None, Field(
    default=None, ge=0,
    description="Whole-scope compare-and-swap: the scope's head revision (memory.revision) as you read it. The "
                "write fails if ANY entry of the scope changed since. Use expected_version for one entry instead.",
)]
Metadata = Annotated[dict[str, Any] | None, Field(
    default=None, description="Optional JSON object (≤ 4 KB) stored with the entry, e.g. {\"source\": \"chat\", "
                              "\"user\": \"ana\"}; search_memory can filter on it.",
)]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberArgs(_Args):
    scope_id: wire.ScopeId
    kind: wire.Kind = "fact"  # an agent that says nothing about the kind remembers a fact (as the CLI does)
    text: wire.EntryText
    key: wire.RefId | None = Field(
        default=None,
        description="A stable key for this fact, e.g. 'user.editor' (printable ASCII, no spaces). Remembering "
                    "the same key again updates that entry instead of adding another, and an identical call "
                    "changes nothing, so a retried call is safe. Omit to always add a new entry.",
    )
    metadata: Metadata
    reason: wire.Reason
    expected_revision: ExpectedRevision


class ListArgs(_Args):
    scope_id: wire.ScopeId
    include_inactive: bool = Field(default=False, description="Also list retired and forgotten entries.")
    limit: int = Field(default=DEFAULT_LIST_LIMIT, ge=1, le=100,
                       description="Entries per page (1..100). Pass next_cursor back as cursor for the next page.")
    cursor: str | None = Field(default=None, min_length=1,
                               description="next_cursor from the previous page, unchanged; omit for the first page.")


class SearchArgs(_Args):
    scope_id: wire.ScopeId
    query: wire.QueryText
    limit: int = Field(default=10, ge=1, le=50, description="Maximum number of hits (1..50).")
    mode: wire.MemorySearchMode = Field(
        default=wire.MemorySearchMode.auto,
        description="auto (hybrid when vectors are available, else full-text), fts, vector or hybrid.")
    more_scope_ids: list[wire.ScopeId] = Field(
        default_factory=list, max_length=MAX_SCOPES - 1,
        description="Other scopes to search as well (e.g. the user's and the project's); all hits are ranked "
                    "together and each names its scope_id.",
    )
    kinds: list[wire.Kind] | None = Field(default=None, min_length=1,
                                          description="Only entries of these kinds, e.g. ['decision'].")
    metadata: dict[str, Any] | None = Field(
        default=None, description="Only entries whose metadata has each of these keys with exactly this value.")
    created_from: datetime | None = Field(
        default=None, description="Only entry versions written at or after this time (ISO 8601; UTC if no zone).")
    created_before: datetime | None = Field(
        default=None, description="Only entry versions written before this time (ISO 8601; UTC if no zone).")


class GetArgs(_Args):
    scope_id: wire.ScopeId
    citation: wire.MemoryCitation = Field(description="The citation, copied unchanged from a result.")


class EntryWrite(_Args):
    scope_id: wire.ScopeId
    citation: wire.MemoryCitation = Field(
        description="The entry's citation, copied unchanged from search_memory, list_memory_entries or a write. "
                    "With neither expected_version nor expected_revision, the write fails only if this entry changed "
                    "since the citation (writes to other entries do not matter).")
    reason: wire.Reason
    expected_version: ExpectedVersion
    expected_revision: ExpectedRevision


class ReviseArgs(EntryWrite):
    text: wire.EntryText
    kind: wire.Kind | None = Field(default=None, description="The new kind; omit to keep the current one.")
    metadata: Metadata


class RetireArgs(EntryWrite):
    pass


class ReactivateArgs(EntryWrite):
    pass


class ForgetArgs(_Args):
    scope_id: wire.ScopeId
    entry_id: wire.RefId = Field(description="The entry to erase (a citation's entry_id, or the key you gave).")


class ForgetScopeArgs(_Args):
    scope_id: wire.ScopeId
    confirm_scope_id: wire.ScopeId = Field(description="Repeat scope_id exactly, to confirm the erasure.")


class RecentArgs(_Args):
    scope_ids: list[wire.ScopeId] = Field(min_length=1, max_length=MAX_SCOPES,
                                          description="The scopes to look at (list_scopes names them).")
    limit: int = Field(default=DEFAULT_RECENT_LIMIT, ge=1, le=50, description="At most this many entries (1..50).")
    since: datetime | None = Field(default=None,
                                   description="Only entries written at or after this time (ISO 8601).")


# --- results ----------------------------------------------------------------------------------------------------


class AgentEntry(BaseModel):
    """One entry as an agent needs it: what it says, its state, and how to change it (citation, version)."""

    scope_id: str
    citation: wire.MemoryCitation
    version: int
    kind: str
    text: str
    state: Literal["active", "retired", "erased"]
    metadata: dict[str, Any]
    created_at: datetime


class MutationResult(BaseModel):
    memory: wire.ArtifactReference
    changed: bool = Field(description="False when the write asked for what the entry already held (nothing written).")
    entry: AgentEntry | None = None


class ForgetResult(BaseModel):
    memory: wire.ArtifactReference
    changed: bool
    erased_entry_ids: list[str]


class EntryListing(BaseModel):
    memory: wire.ArtifactReference | None
    entries: list[AgentEntry]
    next_cursor: str | None = None


class AgentHit(BaseModel):
    scope_id: str
    citation: wire.MemoryCitation
    kind: str
    text: str
    score: float
    matched_by: list[str]
    metadata: dict[str, Any]


class SearchResult(BaseModel):
    mode: str
    hits: list[AgentHit]


class RecentResult(BaseModel):
    entries: list[AgentEntry] = Field(description="Newest first.")
