"""What the MCP tools do (:mod:`pcmem.serve.mcp_tools`), on the server's :class:`~pcmem.serve.operations.MemoryApi`.

Each function takes the tool's validated arguments (:mod:`pcmem.serve.agent_models`), runs the library call off
the event loop and answers a small JSON-able model. Errors are pcmem's own; the tool layer maps them to codes and
advice (:mod:`pcmem.serve.errors`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pcmem
from pcmem.errors import EntryNotFoundError, InputError, RevisionConflictError
from pcmem.serve import agent_models as m
from pcmem.serve import convert
from pcmem.serve.operations import MemoryApi


def agent_entry(scope: str, value: pcmem.MemoryEntry) -> m.AgentEntry:
    version = value.entry
    return m.AgentEntry(scope_id=scope, citation=convert.citation(value.citation), version=version.version,
                        kind=version.kind, text=version.text, state=value.state, metadata=version.metadata,
                        created_at=version.created_at)


def _mutation(scoped: Any, result: pcmem.WriteResult) -> m.MutationResult:
    changed = not (result.unchanged or result.unchanged_entry_ids or result.duplicates)
    cited = result.citations[0] if result.citations else (result.duplicates[0].existing if result.duplicates else None)
    entry = None if cited is None else agent_entry(scoped.scope, scoped.get(cited))
    return m.MutationResult(memory=convert.artifact_reference(result.memory.artifact_id, result.memory.revision),
                            changed=changed, entry=entry)


async def remember(api: MemoryApi, args: m.RememberArgs) -> m.MutationResult:
    new = pcmem.NewEntry(text=args.text, kind=args.kind, metadata=args.metadata or {}, entry_id=args.key)
    request = pcmem.RememberRequest(entries=(new,), expected_revision=args.expected_revision,
                                    upsert=args.key is not None, reason=args.reason)
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _mutation(scoped, scoped.remember(request)))


def _entry_id(scoped: Any, citation: Any) -> str:
    """The cited entry's id, after checking the citation is of this scope's Memory."""
    cited = convert.pcmem_citation(citation)
    head = scoped.head()
    if cited is None or head is None or cited.artifact_id != head.artifact_id:
        raise EntryNotFoundError(f"the citation does not name an entry of scope {scoped.scope!r}")
    return cited.entry_id


def _expectations(scoped: Any, args: m.EntryWrite, entry_id: str) -> dict[str, int | None]:
    """The compare-and-swap of a tool write: the caller's, else "the cited version is still the entry's current one"
    (per entry, so writes to other entries of the scope never invalidate a citation)."""
    if args.expected_version is not None or args.expected_revision is not None:
        return {"expected_version": args.expected_version, "expected_revision": args.expected_revision}
    current = scoped.get_entry(entry_id).entry
    if current.entry_version_id != args.citation.entry_version_id:
        raise RevisionConflictError(f"entry {entry_id!r} changed since this citation: it is at version "
                                    f"{current.version} now; read it again")
    return {"expected_version": current.version}  # re-checked inside the write transaction


#: Writes one cited entry: (the scope, the entry's id, the compare-and-swap keywords) -> the write's result.
CitedWrite = Callable[[Any, str, dict[str, int | None]], pcmem.WriteResult]


async def _change_cited(api: MemoryApi, args: m.EntryWrite, write: CitedWrite) -> m.MutationResult:
    """A write to the entry a tool call cites, off the event loop: the citation checked against the scope, its
    compare-and-swap expectations taken (:func:`_expectations`), the result as the tool answers it."""
    scoped = api.scope(args.scope_id)

    def change() -> m.MutationResult:
        entry_id = _entry_id(scoped, args.citation)
        return _mutation(scoped, write(scoped, entry_id, _expectations(scoped, args, entry_id)))

    return await api.run(change)


async def revise(api: MemoryApi, args: m.ReviseArgs) -> m.MutationResult:
    return await _change_cited(api, args, lambda scoped, entry_id, expected: scoped.revise(pcmem.ReviseRequest(
        entry_id=entry_id, text=args.text, kind=args.kind, metadata=args.metadata, reason=args.reason, **expected)))


async def retire(api: MemoryApi, args: m.RetireArgs) -> m.MutationResult:
    return await _change_cited(api, args, lambda scoped, entry_id, expected: scoped.retire(pcmem.RetireRequest(
        entry_id=entry_id, reason=args.reason, **expected)))


async def reactivate(api: MemoryApi, args: m.ReactivateArgs) -> m.MutationResult:
    return await _change_cited(api, args, lambda scoped, entry_id, expected: scoped.reactivate(
        pcmem.ReactivateRequest(entry_id=entry_id, reason=args.reason, **expected)))


def _forgotten(result: pcmem.WriteResult) -> m.ForgetResult:
    return m.ForgetResult(memory=convert.artifact_reference(result.memory.artifact_id, result.memory.revision),
                          changed=not result.unchanged and bool(result.citations),
                          erased_entry_ids=[citation.entry_id for citation in result.citations])


async def forget(api: MemoryApi, args: m.ForgetArgs) -> m.ForgetResult:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _forgotten(scoped.forget(args.entry_id)))


async def forget_scope(api: MemoryApi, args: m.ForgetScopeArgs) -> m.ForgetResult:
    if args.confirm_scope_id != args.scope_id:
        raise InputError("confirm_scope_id must repeat scope_id exactly; nothing was erased")
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: _forgotten(scoped.forget_scope()))


async def list_entries(api: MemoryApi, args: m.ListArgs) -> m.EntryListing:
    scoped = api.scope(args.scope_id)
    request = pcmem.ListRequest(state="all" if args.include_inactive else "active", limit=args.limit,
                                cursor=args.cursor)
    page = await api.run(lambda: scoped.list(request))
    return m.EntryListing(memory=convert.memory_reference(page.memory),
                          entries=[agent_entry(scoped.scope, entry) for entry in page.entries],
                          next_cursor=page.next_cursor)


async def get_entry(api: MemoryApi, args: m.GetArgs) -> m.AgentEntry:
    scoped = api.scope(args.scope_id)
    cited = convert.pcmem_citation(args.citation)
    if cited is None:
        raise EntryNotFoundError(f"the citation does not name an entry of scope {scoped.scope!r}")
    return agent_entry(scoped.scope, await api.run(lambda: scoped.get(cited)))


async def search(api: MemoryApi, args: m.SearchArgs) -> m.SearchResult:
    request = pcmem.SearchMemoryRequest(
        query=args.query, limit=args.limit, mode=args.mode.value, kinds=args.kinds, metadata=args.metadata,
        created_from=args.created_from, created_before=args.created_before)
    scopes = [args.scope_id, *args.more_scope_ids]

    def read() -> pcmem.SearchPage:
        if len(scopes) == 1:
            return api.scope(scopes[0]).search(request)
        return api.runtime.memory.search(request, scopes=scopes)

    page = await api.run(read, may_rerank=True)
    scope_of = {memory.artifact_id: memory.scope for memory in (*page.memories, *filter(None, [page.memory]))}
    return m.SearchResult(mode=page.mode, hits=[
        m.AgentHit(scope_id=scope_of.get(hit.citation.artifact_id, args.scope_id),
                   citation=convert.citation(hit.citation), kind=hit.kind, text=hit.text, score=hit.score,
                   matched_by=list(hit.matched_by), metadata=hit.metadata)
        for hit in page.hits])


async def recent(api: MemoryApi, args: m.RecentArgs) -> m.RecentResult:
    """The newest active entry versions of the given scopes (remembered or revised last), newest first."""
    if len(set(args.scope_ids)) != len(args.scope_ids):
        raise InputError("scope_ids must name each scope once")
    handles = [api.scope(scope) for scope in args.scope_ids]

    def read() -> list[m.AgentEntry]:
        found = [agent_entry(scoped.scope, entry) for scoped in handles
                 for entry in scoped.list(pcmem.ListRequest(state="active")).entries
                 if args.since is None or entry.entry.created_at >= _utc(args.since)]
        found.sort(key=lambda entry: (entry.created_at, entry.citation.entry_id), reverse=True)
        return found[: args.limit]

    return m.RecentResult(entries=await api.run(read))


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
