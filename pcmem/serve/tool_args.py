"""The argument types the agent tools share (each tool's own argument model is declared beside it, in
:mod:`pcmem.serve.tools`): PowerContext's values plus what an agent needs (keys, per-entry compare-and-swap, several
scopes).

Every value is checked by pcmem's own validators (:mod:`pcmem.validation` through :mod:`pcmem.types.base`), so a tool
refuses what the library refuses: ``limit="5"``, ``limit=5.0``, ``include_inactive=1`` and ``expected_version=true``
are errors, never coerced. The schemas an agent reads are made from the models by :mod:`pcmem.serve.tool_schema`,
which keeps them short.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from pcmem import validation
from pcmem.types.base import Metadata, Revision

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


class NoArgs(Args):
    pass


def scopes_of(args: Any) -> list[str]:
    """The scopes a search or context call reads: ``scope_id`` and ``more_scope_ids``, each once."""
    return list(dict.fromkeys([args.scope_id, *args.more_scope_ids]))
