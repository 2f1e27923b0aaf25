"""``prepare_context``: prompt-ready memory for a turn."""

from __future__ import annotations

from pydantic import Field

from pcmem.serve.operations import MemoryApi
from pcmem.serve.tool_args import MoreScopes, Query, Scoped, scopes_of
from pcmem.serve.tool_declaration import Json, tool
from pcmem.types.base import Count, Flag
from pcmem.types.context import DEFAULT_CONTEXT_BYTES, MAX_CONTEXT_BYTES, MIN_CONTEXT_BYTES


class ContextArgs(Scoped):
    query: Query | None = Field(default=None, description="What the turn is about; omit for the newest entries "
                                                          "only.")
    more_scope_ids: MoreScopes
    max_bytes: Count = Field(default=DEFAULT_CONTEXT_BYTES, ge=MIN_CONTEXT_BYTES, le=MAX_CONTEXT_BYTES)
    max_tokens: Count | None = Field(default=None, ge=64, description="Counted as 1 per 4 letters or other character.")
    relevant: Count = Field(default=6, ge=0, le=50, description="Search hits to include.")
    recent: Count = Field(default=4, ge=0, le=50, description="Newest entries to include.")
    explain: Flag = Field(default=False, description="Also return omitted: what was left out, and why.")


@tool("prepare_context",
      "Prompt-ready memory for this turn, at most max_bytes: entries relevant to query plus the newest ones, each "
      "once, numbered [n].", returns="{text, bytes, tokens, items}", arguments=ContextArgs)
async def prepare_context(api: MemoryApi, args: ContextArgs) -> Json:
    scopes = scopes_of(args)
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
