"""``search_memory``: search active entries by meaning and keywords."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

import pcmem
from pcmem.serve.operations import MemoryApi
from pcmem.serve.tool_args import MoreScopes, Query, Scoped, scopes_of
from pcmem.serve.tool_declaration import Json, tool
from pcmem.serve.tool_results import entry_json, hit_json
from pcmem.types.base import Count, Kind, Metadata, Timestamp


class SearchArgs(Scoped):
    query: Query
    limit: Count = Field(default=10, ge=1, le=50)
    mode: Literal["auto", "fts", "vector", "hybrid"] = "auto"
    more_scope_ids: MoreScopes
    kinds: list[Kind] | None = Field(default=None, min_length=1)
    metadata: Metadata | None = Field(default=None, description="Only entries with these exact metadata values.")
    created_from: Timestamp | None = Field(default=None, description="Entries written at or after it.")
    created_before: Timestamp | None = Field(default=None, description="Entries written before it.")


@tool("search_memory", "Search active entries by meaning and keywords.",
      returns="{mode, hits}: entries with a score", arguments=SearchArgs)
async def search_memory(api: MemoryApi, args: SearchArgs) -> Json:
    request = pcmem.SearchMemoryRequest(
        query=args.query, limit=args.limit, mode=args.mode, kinds=args.kinds, metadata=args.metadata,
        created_from=args.created_from, created_before=args.created_before)
    scopes = scopes_of(args)

    def read() -> Json:
        page = (api.scope(scopes[0]).search(request) if len(scopes) == 1
                else api.runtime.memory.search(request, scopes=scopes))
        scope_of = {memory.artifact_id: memory.scope for memory in (*page.memories, *filter(None, [page.memory]))}
        hits = []
        for hit in page.hits:
            scope = scope_of.get(hit.citation.artifact_id, args.scope_id)
            shown = hit_json(scope, hit) if hit.version is not None and hit.created_at is not None else \
                entry_json(scope, api.scope(scope).get(hit.citation))  # a hit made by hand: read what it lacks
            hits.append({**shown, "score": round(hit.score, 6), "matched_by": list(hit.matched_by)})
        return {"mode": page.mode, "hits": hits}

    return await api.run(read, may_rerank=True)
