"""The tools that erase for good: ``forget_memory_entry`` and ``forget_memory_scope``."""

from __future__ import annotations

from pydantic import Field

from pcmem.errors import InputError
from pcmem.serve.operations import MemoryApi
from pcmem.serve.tool_args import Scoped, ScopeId
from pcmem.serve.tool_declaration import Json, tool
from pcmem.serve.tool_results import erased
from pcmem.types.base import EntryId


class ForgetArgs(Scoped):
    entry_id: EntryId


class ForgetScopeArgs(Scoped):
    confirm_scope_id: ScopeId = Field(description="scope_id again, to confirm.")


@tool("forget_memory_entry",
      "Erase an entry and all its versions for good (cannot be undone): only when the user asks to delete data, else "
      "retire_memory_entry.", returns="{changed, erased_entry_ids}", arguments=ForgetArgs, read_only=False,
      destructive=True)
async def forget_memory_entry(api: MemoryApi, args: ForgetArgs) -> Json:
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: erased(scoped.forget(args.entry_id)))


@tool("forget_memory_scope",
      "Erase every entry of a scope for good (cannot be undone), e.g. for a user who asks to be forgotten.",
      returns="{changed, erased_entry_ids}", arguments=ForgetScopeArgs, read_only=False, destructive=True)
async def forget_memory_scope(api: MemoryApi, args: ForgetScopeArgs) -> Json:
    if args.confirm_scope_id != args.scope_id:
        raise InputError("confirm_scope_id must repeat scope_id exactly; nothing was erased")
    scoped = api.scope(args.scope_id)
    return await api.run(lambda: erased(scoped.forget_scope()))
