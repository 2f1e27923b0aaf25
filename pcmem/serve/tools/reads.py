"""The tools that read entries and scopes: ``list_memory_entries``, ``get_memory_entry``, ``list_recent_memory``,
``list_scopes`` and ``entry_history``."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

import pcmem
from pcmem.errors import EntryErasedError, EntryNotFoundError
from pcmem.serve.operations import MemoryApi
from pcmem.serve.tool_args import MAX_SCOPES, Args, NoArgs, Scoped, ScopeId
from pcmem.serve.tool_declaration import Json, tool
from pcmem.serve.tool_results import entry_json, time_text
from pcmem.types.base import Count, EntryId, Flag, Timestamp

#: Default page of ``list_memory_entries``: 50 entries of a few hundred characters each stay well under 8k tokens.
DEFAULT_LIST_LIMIT = 50
#: Default number of ``list_recent_memory`` entries.
DEFAULT_RECENT_LIMIT = 20


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


class RecentArgs(Args):
    scope_ids: list[ScopeId] = Field(min_length=1, max_length=MAX_SCOPES)
    limit: Count = Field(default=DEFAULT_RECENT_LIMIT, ge=1, le=50)
    since: Timestamp | None = Field(default=None, description="Only entries written at or after it.")


class HistoryArgs(Scoped):
    entry_id: EntryId


@tool("list_memory_entries", "A page of a scope's active entries.",
      returns="{revision, entries, next_cursor}", arguments=ListArgs)
async def list_memory_entries(api: MemoryApi, args: ListArgs) -> Json:
    scoped = api.scope(args.scope_id)
    request = pcmem.ListRequest(state="all" if args.include_inactive else "active", limit=args.limit,
                                cursor=args.cursor)
    page = await api.run(lambda: scoped.list(request))
    return {"revision": page.memory.revision if page.memory else 0,
            "entries": [entry_json(scoped.scope, entry) for entry in page.entries], "next_cursor": page.next_cursor}


@tool("get_memory_entry", "One entry: by entry_id as it is now, or by citation as that version was.",
      returns="the entry", arguments=GetArgs)
async def get_memory_entry(api: MemoryApi, args: GetArgs) -> Json:
    scoped = api.scope(args.scope_id)
    if args.citation is not None:
        cited = pcmem.Citation.parse(args.citation)
        return entry_json(scoped.scope, await api.run(lambda: scoped.get(cited)))
    entry_id = args.entry_id
    assert entry_id is not None  # the model requires one of them
    return entry_json(scoped.scope, await api.run(lambda: scoped.get_entry(entry_id)))


@tool("list_recent_memory", "The newest active entries of some scopes, newest first.",
      returns="{entries}", arguments=RecentArgs)
async def list_recent_memory(api: MemoryApi, args: RecentArgs) -> Json:
    page = await api.run(lambda: api.runtime.memory.recent(scopes=args.scope_ids, limit=args.limit,
                                                           since=args.since))
    return {"entries": [entry_json(item.scope, item.entry) for item in page.entries]}


@tool("list_scopes", "Every scope with its revision and counts of active and retired entries.",
      returns="{scopes}", arguments=NoArgs)
async def list_scopes(api: MemoryApi, args: NoArgs) -> Json:
    found = await api.list_scopes()
    return {"scopes": [{"scope_id": s.scope, "revision": s.head_revision, "active": s.active_count,
                        "retired": s.retired_count, "updated_at": time_text(s.updated_at)} for s in found]}


@tool("entry_history", "Every revision that changed an entry, oldest first.",
      returns="{entry_id, state, events}; a forgotten entry's state is erased, with erased_in_revision",
      arguments=HistoryArgs)
async def entry_history(api: MemoryApi, args: HistoryArgs) -> Json:
    """Every revision that changed the entry, oldest first; a forgotten entry shows its erasure (which revisions
    changed it and which one erased it; its text, kind, metadata and reasons are gone)."""
    scoped = api.scope(args.scope_id)

    def read() -> Json:
        try:
            found = scoped.history(args.entry_id)
        except EntryErasedError as error:
            return _erasure(scoped, error)
        events = [{"revision": e.revision, "operation": e.operation, "at": time_text(e.created_at),
                   "version": e.entry.version, "kind": e.entry.kind, "text": e.entry.text, "state": e.state,
                   "reason": e.reason} for e in found.events]
        return {"entry_id": found.entry_id, "state": events[-1]["state"], "events": events}

    return await api.run(read)


def _erasure(scoped: Any, error: EntryErasedError) -> Json:
    tombstone = error.tombstone
    if not isinstance(tombstone, pcmem.Tombstone):
        raise EntryNotFoundError(str(error))
    times = {info.revision: info.created_at for info in scoped.revisions()}
    events = [{"revision": c.revision, "operation": c.operation, "at": time_text(times[c.revision]), "state": c.state}
              for c in scoped.changes(0).changes if c.entry_id == tombstone.entry_id]
    return {"entry_id": tombstone.entry_id, "state": "erased", "erased_in_revision": tombstone.erased_in_revision,
            "events": events}
