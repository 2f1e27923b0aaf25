"""The MCP tools: PowerContext's Memory operations (by their operation ids, with the arguments agents need on top:
:mod:`pcmem.serve.agent_models`) plus pcmem's reactivate, forget, recent entries, scopes and entry history.

Input schemas are the argument models' JSON schemas (a superset of the HTTP v1 wire models for the shared ids). A
pcmem error becomes a tool error (``is_error``) whose text names the PowerContext error code and what the agent
should do next; it is not a protocol error, so the model sees it and can correct itself.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from pydantic import BaseModel, ValidationError

import pcmem
from pcmem.serve import agent_models as m
from pcmem.serve import agent_ops, operations
from pcmem.serve.errors import Failure, failure_for, tool_error_text
from pcmem.serve.operations import MemoryApi

log = logging.getLogger("pcmem.serve")

INSTRUCTIONS = (
    "pcmem is this user's long-term memory, stored locally. Each scope_id (a project, a user, a topic) has its own "
    "Memory with numbered revisions. At the start of a session call list_recent_memory (list_scopes names the "
    "scopes); search before answering questions about past decisions or preferences; remember durable facts the "
    "user states, with a key for facts that may change later. To change an entry, pass its citation unchanged "
    "with expected_version (the entry's version you read); a revision_conflict means the entry changed since: read "
    "it again and retry. forget_memory_entry erases for good and cannot be undone."
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[BaseModel]
    call: Callable[[MemoryApi, Any], Awaitable[Any]]
    read_only: bool = True
    destructive: bool = False


class _NoArguments(BaseModel):
    model_config = {"extra": "forbid"}


_CAS = ("Compare-and-swap: by default (or with expected_version, the entry's version you read) it fails only if "
        "this entry changed since you read it; expected_revision (the scope's head revision) makes any change to "
        "the scope a conflict.")

TOOLS = (
    ToolSpec("search_memory",
             "Search active Memory entries by meaning and keywords (hybrid full-text + vector) in scope_id and "
             "optionally more_scope_ids, filtered by kinds, metadata and created time. Returns hits with text, "
             "kind, metadata, scope_id and the citation to read, revise or retire the entry.",
             m.SearchArgs, agent_ops.search),
    ToolSpec("remember_memory",
             "Save one curated Memory entry (a fact, preference, decision...) in a scope. Give a key for a fact "
             "that may change (e.g. 'user.editor'): the same key updates that entry instead of duplicating it, and "
             "retrying the same call is harmless. Keep entries short and self-contained.",
             m.RememberArgs, agent_ops.remember, read_only=False),
    ToolSpec("list_memory_entries",
             "List a scope's entries (active ones unless include_inactive), a page at a time (limit, default 50); "
             "pass next_cursor back as cursor for the next page. Each entry has its citation and version.",
             m.ListArgs, agent_ops.list_entries),
    ToolSpec("get_memory_entry",
             "Read back exactly the entry version a citation names, as it stood in the cited revision.",
             m.GetArgs, agent_ops.get_entry),
    ToolSpec("revise_memory_entry",
             "Correct an active entry: replace its text (and optionally kind, metadata) with a new version. " + _CAS,
             m.ReviseArgs, agent_ops.revise, read_only=False),
    ToolSpec("retire_memory_entry",
             "Deactivate an entry that no longer holds; it stays in history and reactivate_memory_entry can bring "
             "it back. " + _CAS,
             m.RetireArgs, agent_ops.retire, read_only=False),
    ToolSpec("reactivate_memory_entry",
             "Make a retired entry active again, at the version it had. " + _CAS,
             m.ReactivateArgs, agent_ops.reactivate, read_only=False),
    ToolSpec("forget_memory_entry",
             "Erase an entry for good: the text and metadata of every version it ever had, in every revision. "
             "This CANNOT be undone; use it when the user asks to delete data, otherwise retire_memory_entry. Its "
             "key can be remembered again later as a new entry.",
             m.ForgetArgs, agent_ops.forget, read_only=False, destructive=True),
    ToolSpec("forget_memory_scope",
             "Erase every entry of a scope for good (e.g. a user who asks to be forgotten). This CANNOT be undone. "
             "confirm_scope_id must repeat scope_id.",
             m.ForgetScopeArgs, agent_ops.forget_scope, read_only=False, destructive=True),
    ToolSpec("list_recent_memory",
             "The most recently written active entries of one or more scopes, newest first (optionally since a "
             "time). Call it at the start of a session to pick up recent work.",
             m.RecentArgs, agent_ops.recent),
    ToolSpec("list_scopes",
             "List every scope that has a Memory, with its head revision and counts of active and retired entries.",
             _NoArguments, lambda api, _: api.list_scopes()),
    ToolSpec("entry_history",
             "Every revision that changed one entry, oldest first, with the version (text, kind) it pointed at.",
             operations.EntryHistoryRequest, MemoryApi.entry_history),
)
TOOL_NAMES = tuple(spec.name for spec in TOOLS)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.setdefault("properties", {})
    return schema


@functools.cache
def tool_list() -> tuple[types.Tool, ...]:
    """Built once: the SDK lists the tools again on every call (to check arguments), and schema generation costs
    ~1 ms a model, which was most of an MCP search's overhead over HTTP."""
    return tuple(_tool(spec) for spec in TOOLS)


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name, description=spec.description, input_schema=_schema(spec.arguments),
        annotations=types.ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                                          idempotent_hint=spec.read_only, open_world_hint=False),
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return {"items": [_jsonable(item) for item in value]}
    return value


def _error(failure: Failure, tool: str = "") -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=tool_error_text(failure, tool))],
                                structured_content=failure.envelope(), is_error=True)


async def call(api: MemoryApi, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run one tool; every failure comes back as a tool error result, never as an exception."""
    spec = next((spec for spec in TOOLS if spec.name == name), None)
    if spec is None:
        return _error(Failure(404, "unknown_tool", f"no tool {name!r}; the tools are {', '.join(TOOL_NAMES)}"))
    try:
        request = spec.arguments.model_validate(arguments)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors())
        return _error(Failure(422, "invalid_request", problems), name)
    try:
        result = _jsonable(await spec.call(api, request))
    except Exception as error:  # noqa: BLE001 - mapped to the tool error the agent reads
        failure = failure_for(error)
        if failure.status >= 500 and failure.code == "internal_error":
            log.exception("tool %s failed", name)
        return _error(failure, name)
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(result, ensure_ascii=False, separators=(",", ":")))],
                                structured_content=result)


def build_server(api: MemoryApi) -> Server[Any]:
    """The low-level MCP server over ``api``; transports (stdio, streamable HTTP) are chosen by the caller."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tool_list()))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(api, params.name, params.arguments or {})

    return Server("pcmem", version=pcmem.__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)

