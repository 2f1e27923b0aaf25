"""The MCP tools' arguments (also served as ``POST /x/pcmem/tools/{name}``): PowerContext's operations plus what an
agent needs (keys, metadata, per-entry compare-and-swap, erasure, paging, filters, several scopes, recent entries,
context blocks).

Every value is checked by pcmem's own validators (:mod:`pcmem.validation` through :mod:`pcmem.types.base`), so a tool
refuses what the library refuses: ``limit="5"``, ``limit=5.0``, ``include_inactive=1`` and ``expected_version=true``
are errors, never coerced. Each kind of value is declared once here; the schemas an agent reads are made from these
models by :mod:`pcmem.serve.tool_schema`, which keeps them short.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from pcmem import validation
from pcmem.types.base import Count, EntryId, EntryText, Flag, Kind, Metadata, Reason, Revision, Timestamp
from pcmem.types.context import DEFAULT_CONTEXT_BYTES, MAX_CONTEXT_BYTES, MIN_CONTEXT_BYTES

#: Default page of ``list_memory_entries``: 50 entries of a few hundred characters each stay well under 8k tokens.
DEFAULT_LIST_LIMIT = 50
#: Default number of ``list_recent_memory`` entries.
DEFAULT_RECENT_LIMIT = 20
#: Scopes one search, recent-entries or context call may read.
MAX_SCOPES = 10

ScopeId = Annotated[str, BeforeValidator(validation.validate_scope)]
Query = Annotated[str, BeforeValidator(lambda value: validation.normalize_text(value, "query"))]
Version = Annotated[Revision | None, Field(default=None, ge=1, description=(
    "The version you read; fails if the entry changed since."))]
ScopeRevision = Annotated[Revision | None, Field(default=None, description=(
    "The scope revision you read; fails if anything in the scope changed since."))]
MetadataArg = Annotated[Metadata | None, Field(default=None, description="JSON object (≤ 4 KB) kept with the entry.")]
MoreScopes = Annotated[list[ScopeId], Field(default_factory=list, max_length=MAX_SCOPES - 1,
                                            description="Other scopes to read as well.")]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Scoped(Args):
    scope_id: ScopeId


class SearchArgs(Scoped):
    query: Query
    limit: Count = Field(default=10, ge=1, le=50)
    mode: Literal["auto", "fts", "vector", "hybrid"] = "auto"
    more_scope_ids: MoreScopes
    kinds: list[Kind] | None = Field(default=None, min_length=1)
    metadata: Metadata | None = Field(default=None, description="Only entries with these exact metadata values.")
    created_from: Timestamp | None = Field(default=None, description="Entries written at or after it.")
    created_before: Timestamp | None = Field(default=None, description="Entries written before it.")


class RememberArgs(Scoped):
    text: EntryText
    kind: Kind = Field(default="fact", description="fact, preference, decision, note...")
    key: EntryId | None = Field(default=None, description=(
        "A stable id, e.g. 'user.editor': the same key again updates that entry; a repeated call changes nothing."))
    metadata: MetadataArg
    reason: Reason = None
    expected_revision: ScopeRevision


class ListArgs(Scoped):
    include_inactive: Flag = Field(default=False, description="Also retired and forgotten entries.")
    limit: Count = Field(default=DEFAULT_LIST_LIMIT, ge=1, le=100)
    cursor: str | None = Field(default=None, min_length=1, description="next_cursor of the previous page.")


class GetArgs(Scoped):
    entry_id: EntryId | None = Field(default=None, description="The entry as it is now.")
    citation: str | None = Field(default=None, min_length=1, description="Instead of entry_id: exactly that "
                                                                         "version.")

    @model_validator(mode="after")
    def _one(self) -> GetArgs:
        if (self.entry_id is None) == (self.citation is None):
            raise ValueError("give entry_id or citation (one of them)")
        return self


class EntryWrite(Scoped):
    entry_id: EntryId
    expected_version: Version
    reason: Reason = None


class ReviseArgs(EntryWrite):
    text: EntryText
    kind: Kind | None = Field(default=None, description="Omit to keep it.")
    metadata: Metadata | None = Field(default=None, description="Replaces it; omit to keep it.")


class ForgetArgs(Scoped):
    entry_id: EntryId


class ForgetScopeArgs(Scoped):
    confirm_scope_id: ScopeId = Field(description="scope_id again, to confirm.")


class RecentArgs(Args):
    scope_ids: list[ScopeId] = Field(min_length=1, max_length=MAX_SCOPES)
    limit: Count = Field(default=DEFAULT_RECENT_LIMIT, ge=1, le=50)
    since: Timestamp | None = Field(default=None, description="Only entries written at or after it.")


class NoArgs(Args):
    pass


class HistoryArgs(Scoped):
    entry_id: EntryId


class ContextArgs(Scoped):
    query: Query | None = Field(default=None, description="What the turn is about; omit for the newest entries "
                                                          "only.")
    more_scope_ids: MoreScopes
    max_bytes: Count = Field(default=DEFAULT_CONTEXT_BYTES, ge=MIN_CONTEXT_BYTES, le=MAX_CONTEXT_BYTES)
    max_tokens: Count | None = Field(default=None, ge=64, description="Counted as 1 per 4 letters or other character.")
    relevant: Count = Field(default=6, ge=0, le=50, description="Search hits to include.")
    recent: Count = Field(default=4, ge=0, le=50, description="Newest entries to include.")
    explain: Flag = Field(default=False, description="Also return omitted: what was left out, and why.")


def scopes_of(args: Any) -> list[str]:
    """The scopes a search or context call reads: ``scope_id`` and ``more_scope_ids``, each once."""
    return list(dict.fromkeys([args.scope_id, *args.more_scope_ids]))
