"""What the MCP tools (and ``POST /x/pcmem/tools/{name}``) do, on the server's :class:`~pcmem.serve.operations.MemoryApi`.

Each function takes the tool's validated arguments (:mod:`pcmem.serve.agent_models`), runs library calls off the
event loop and answers plain JSON. Every entry, wherever it appears (a list, a search hit, a write, recent entries),
has one flat shape, :func:`entry_json`; a hit adds its score. Errors are pcmem's own; the tool layer maps them to
codes and advice (:mod:`pcmem.serve.errors`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pcmem
from pcmem.errors import EntryErasedError, EntryNotFoundError, InputError
from pcmem.serve import agent_models as m
from pcmem.serve.operations import MemoryApi

Json = dict[str, Any]


def entry_json(scope: str, value: pcmem.MemoryEntry) -> Json:
    """An entry as every tool result shows it: what it says, its state, and how to name it (``entry_id``, the
    ``version`` a compare-and-swap expects, the exact ``citation``)."""
    version = value.entry
    return {"scope_id": scope, "entry_id": version.entry_id, "version": version.version, "kind": version.kind,
            "text": version.text, "state": value.state, "metadata": version.metadata,
            "created_at": _time(version.created_at), "citation": str(value.citation)}


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def _written(scoped: Any, result: pcmem.WriteResult) -> Json:
    """What a write tool answers: whether it changed anything, and the entry as the write left it (carried by the
    result; a duplicate the write gate found, or an entry of a resent write erased since, is read by citation)."""
    changed = not (result.unchanged or result.unchanged_entry_ids or result.duplicates)
    if result.entries:
        return {"changed": changed, "entry": entry_json(scoped.scope, result.entries[0])}
    cited = result.citations[0] if result.citations else (result.duplicates[0].existing if result.duplicates else None)
    return {"changed": changed, "entry": None if cited is None else entry_json(scoped.scope, scoped.get(cited))}


async def remember(api: MemoryApi, args: m.RememberArgs) -> Json:
    new = pcmem.NewEntry(text=args.text, kind=args.kind, metadata=args.metadata or {}, entry_id=args.key)
    request = pcmem.RememberRequest(entries=(new,), expected_revision=args.expected_revision,
                                    upsert=args.key is not None, reason=args.reason)
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _written(scoped, scoped.remember(request)))


def _expected(scoped: Any, args: m.EntryWrite) -> dict[str, Any]:
    """The write's compare-and-swap on the entry (never on the whole scope: writes to other entries do not matter):
    the version the caller read, else the one the entry has now (the library re-checks it inside the write)."""
    if args.expected_version is not None:
        return {"expected_version": args.expected_version}
    return {"expected_version": scoped.get_entry(args.entry_id).entry.version}


async def revise(api: MemoryApi, args: m.ReviseArgs) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _written(scoped, scoped.revise(pcmem.ReviseRequest(
        entry_id=args.entry_id, text=args.text, kind=args.kind, metadata=args.metadata, reason=args.reason,
        **_expected(scoped, args)))))


async def retire(api: MemoryApi, args: m.EntryWrite) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _written(scoped, scoped.retire(pcmem.RetireRequest(
        entry_id=args.entry_id, reason=args.reason, **_expected(scoped, args)))))


async def reactivate(api: MemoryApi, args: m.EntryWrite) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _written(scoped, scoped.reactivate(pcmem.ReactivateRequest(
        entry_id=args.entry_id, reason=args.reason, **_expected(scoped, args)))))


def _erased(result: pcmem.WriteResult) -> Json:
    return {"changed": not result.unchanged and bool(result.citations),
            "erased_entry_ids": [citation.entry_id for citation in result.citations]}


async def forget(api: MemoryApi, args: m.ForgetArgs) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _erased(scoped.forget(args.entry_id)))


async def forget_scope(api: MemoryApi, args: m.ForgetScopeArgs) -> Json:
    if args.confirm_scope_id != args.scope_id:
        raise InputError("confirm_scope_id must repeat scope_id exactly; nothing was erased")
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _erased(scoped.forget_scope()))


async def list_entries(api: MemoryApi, args: m.ListArgs) -> Json:
    scoped = api.scope(args.scope_id)
    request = pcmem.ListRequest(state="all" if args.include_inactive else "active", limit=args.limit,
                                cursor=args.cursor)
    page = await api.run(lambda: scoped.list(request))
    return {"revision": page.memory.revision if page.memory else 0,
            "entries": [entry_json(scoped.scope, entry) for entry in page.entries], "next_cursor": page.next_cursor}


async def get_entry(api: MemoryApi, args: m.GetArgs) -> Json:
    scoped = api.scope(args.scope_id)
    if args.citation is not None:
        cited = pcmem.Citation.parse(args.citation)
        return entry_json(scoped.scope, await api.run(lambda: scoped.get(cited)))
    entry_id = args.entry_id
    assert entry_id is not None  # the model requires one of them
    return entry_json(scoped.scope, await api.run(lambda: scoped.get_entry(entry_id)))


async def search(api: MemoryApi, args: m.SearchArgs) -> Json:
    request = pcmem.SearchMemoryRequest(
        query=args.query, limit=args.limit, mode=args.mode, kinds=args.kinds, metadata=args.metadata,
        created_from=args.created_from, created_before=args.created_before)
    scopes = m.scopes_of(args)

    def read() -> Json:
        page = (api.scope(scopes[0]).search(request) if len(scopes) == 1
                else api.runtime.memory.search(request, scopes=scopes))
        scope_of = {memory.artifact_id: memory.scope for memory in (*page.memories, *filter(None, [page.memory]))}
        hits = []
        for hit in page.hits:  # the version and date a hit lacks: one read each, of the exact version it cites
            scope = scope_of.get(hit.citation.artifact_id, args.scope_id)
            hits.append({**entry_json(scope, api.scope(scope).get(hit.citation)), "score": round(hit.score, 6),
                         "matched_by": list(hit.matched_by)})
        return {"mode": page.mode, "hits": hits}

    return await api.run(read, may_rerank=True)


async def recent(api: MemoryApi, args: m.RecentArgs) -> Json:
    page = await api.run(lambda: api.runtime.memory.recent(scopes=args.scope_ids, limit=args.limit,
                                                           since=args.since))
    return {"entries": [entry_json(item.scope, item.entry) for item in page.entries]}


async def scopes(api: MemoryApi, args: m.NoArgs) -> Json:
    found = await api.list_scopes()
    return {"scopes": [{"scope_id": s.scope, "revision": s.head_revision, "active": s.active_count,
                        "retired": s.retired_count, "updated_at": _time(s.updated_at)} for s in found]}


async def history(api: MemoryApi, args: m.HistoryArgs) -> Json:
    """Every revision that changed the entry, oldest first; a forgotten entry shows its erasure (which revisions
    changed it and which one erased it; its text, kind, metadata and reasons are gone)."""
    scoped = api.scope(args.scope_id)

    def read() -> Json:
        try:
            found = scoped.history(args.entry_id)
        except EntryErasedError as error:
            return _erasure(scoped, error)
        events = [{"revision": e.revision, "operation": e.operation, "at": _time(e.created_at),
                   "version": e.entry.version, "kind": e.entry.kind, "text": e.entry.text, "state": e.state,
                   "reason": e.reason} for e in found.events]
        return {"entry_id": found.entry_id, "state": events[-1]["state"], "events": events}

    return await api.run(read)


def _erasure(scoped: Any, error: EntryErasedError) -> Json:
    tombstone = error.tombstone
    if not isinstance(tombstone, pcmem.Tombstone):
        raise EntryNotFoundError(str(error))
    times = {info.revision: info.created_at for info in scoped.revisions()}
    events = [{"revision": c.revision, "operation": c.operation, "at": _time(times[c.revision]), "state": c.state}
              for c in scoped.changes(0).changes if c.entry_id == tombstone.entry_id]
    return {"entry_id": tombstone.entry_id, "state": "erased", "erased_in_revision": tombstone.erased_in_revision,
            "events": events}


async def context(api: MemoryApi, args: m.ContextArgs) -> Json:
    scopes = m.scopes_of(args)
    block = await api.run(lambda: api.runtime.memory.context(
        args.query, scopes=scopes, max_bytes=args.max_bytes, max_tokens=args.max_tokens, relevant=args.relevant,
        recent=args.recent, explain=args.explain), may_rerank=args.query is not None)
    result: Json = {"text": block.text, "bytes": block.bytes, "tokens": block.tokens, "items": [
        {"n": item.number, "scope_id": item.scope, "entry_id": item.citation.entry_id, "version": item.version,
         "citation": str(item.citation), "source": item.source, "truncated": item.truncated}
        for item in block.items]}
    if args.explain:
        result["omitted"] = [{"scope_id": o.scope, "entry_id": o.citation.entry_id, "source": o.source,
                              "reason": o.reason, "duplicate_of": o.duplicate_of, "bytes": o.bytes}
                             for o in block.omitted]
    return result
