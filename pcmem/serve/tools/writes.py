"""The tools that write an entry: ``remember_memory``, ``revise_memory_entry``, ``retire_memory_entry`` and
``reactivate_memory_entry``. Each returns ``{changed, entry}``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

import pcmem
from pcmem.serve.operations import MemoryApi
from pcmem.serve.tool_args import MetadataArg, Scoped, ScopeRevision, Version
from pcmem.serve.tool_declaration import Json, tool
from pcmem.serve.tool_results import written
from pcmem.types.base import EntryId, EntryText, Kind, Metadata, Reason

_ENTRY = "{changed, entry}"


class RememberArgs(Scoped):
    text: EntryText
    kind: Kind = Field(default="fact", description="fact, preference, decision, note...")
    key: EntryId | None = Field(default=None, description=(
        "A stable id, e.g. 'user.editor': the same key again updates that entry; a repeated call changes nothing."))
    metadata: MetadataArg
    reason: Reason = None
    expected_revision: ScopeRevision


class EntryWrite(Scoped):
    entry_id: EntryId
    expected_version: Version
    reason: Reason = None


class ReviseArgs(EntryWrite):
    text: EntryText
    kind: Kind | None = Field(default=None, description="Omit to keep it.")
    metadata: Metadata | None = Field(default=None, description="Replaces it; omit to keep it.")


@tool("remember_memory", "Save one durable fact, preference or decision; short and self-contained.",
      returns=_ENTRY, arguments=RememberArgs, read_only=False, idempotent=False)
async def remember_memory(api: MemoryApi, args: RememberArgs) -> Json:
    new = pcmem.NewEntry(text=args.text, kind=args.kind, metadata=args.metadata or {}, entry_id=args.key)
    request = pcmem.RememberRequest(entries=(new,), expected_revision=args.expected_revision,
                                    upsert=args.key is not None, reason=args.reason)
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: written(scoped, scoped.remember(request)))


def _expected(scoped: Any, args: EntryWrite) -> dict[str, Any]:
    """The write's compare-and-swap on the entry (never on the whole scope: writes to other entries do not matter):
    the version the caller read, else the one the entry has now (the library re-checks it inside the write)."""
    if args.expected_version is not None:
        return {"expected_version": args.expected_version}
    return {"expected_version": scoped.get_entry(args.entry_id).entry.version}


@tool("revise_memory_entry", "Correct an active entry: a new version with this text.",
      returns=_ENTRY, arguments=ReviseArgs, read_only=False)
async def revise_memory_entry(api: MemoryApi, args: ReviseArgs) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: written(scoped, scoped.revise(pcmem.ReviseRequest(
        entry_id=args.entry_id, text=args.text, kind=args.kind, metadata=args.metadata, reason=args.reason,
        **_expected(scoped, args)))))


@tool("retire_memory_entry", "Deactivate an entry that no longer holds; its history keeps it.",
      returns=_ENTRY, arguments=EntryWrite, read_only=False)
async def retire_memory_entry(api: MemoryApi, args: EntryWrite) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: written(scoped, scoped.retire(pcmem.RetireRequest(
        entry_id=args.entry_id, reason=args.reason, **_expected(scoped, args)))))


@tool("reactivate_memory_entry", "Make a retired entry active again.",
      returns=_ENTRY, arguments=EntryWrite, read_only=False)
async def reactivate_memory_entry(api: MemoryApi, args: EntryWrite) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: written(scoped, scoped.reactivate(pcmem.ReactivateRequest(
        entry_id=args.entry_id, reason=args.reason, **_expected(scoped, args)))))
