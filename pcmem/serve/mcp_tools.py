"""The MCP tools: PowerContext's Memory operations (by their operation ids) plus ``list_scopes`` and ``entry_history``.

Input schemas are the wire models' JSON schemas, so the MCP tools, HTTP v1 and ``/openapi.json`` take the same
arguments. A pcmem error becomes a tool error (``is_error``) whose text names the PowerContext error code and what
the agent should do next; it is not a protocol error, so the model sees it and can correct itself.
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
from pcmem.serve import operations, wire
from pcmem.serve.errors import Failure, failure_for, tool_error_text
from pcmem.serve.operations import MemoryApi

log = logging.getLogger("pcmem.serve")

INSTRUCTIONS = (
    "pcmem is this user's long-term memory, stored locally. Each scope_id (a project, a user, a topic) has its own "
    "Memory with numbered revisions. Search before answering questions about past decisions or preferences; "
    "remember durable facts the user states. To change or retire an entry, pass the citation you got from "
    "list_memory_entries or search_memory unchanged; a revision_conflict means someone wrote in between: read again "
    "and retry with the new citation."
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[BaseModel]
    call: Callable[[MemoryApi, Any], Awaitable[Any]]
    read_only: bool = True


class _NoArguments(BaseModel):
    model_config = {"extra": "forbid"}


TOOLS = (
    ToolSpec("search_memory",
             "Search one scope's active Memory entries by meaning and keywords (hybrid full-text + vector). Returns "
             "hits with their text, a score and the exact citation to read, revise or retire the entry.",
             wire.SearchMemoryRequest, MemoryApi.search_memory),
    ToolSpec("remember_memory",
             "Save one already-curated Memory entry (a fact, preference, decision...) in a scope, as a new revision. "
             "Keep entries short and self-contained.",
             wire.RememberMemoryRequest, MemoryApi.remember_memory, read_only=False),
    ToolSpec("list_memory_entries",
             "List the entries of a scope's current head revision, each with its citation. Use it to get fresh "
             "citations before revise_memory_entry or retire_memory_entry.",
             wire.ListMemoryEntriesRequest, MemoryApi.list_memory_entries),
    ToolSpec("get_memory_entry",
             "Read back exactly the entry version a citation names, as it stood in the cited revision.",
             wire.GetMemoryEntryRequest, MemoryApi.get_memory_entry),
    ToolSpec("revise_memory_entry",
             "Replace an active entry's text (and kind) with a new version. The citation must be from the current "
             "head revision (compare-and-swap).",
             wire.ReviseMemoryEntryRequest, MemoryApi.revise_memory_entry, read_only=False),
    ToolSpec("retire_memory_entry",
             "Deactivate an active entry (it stays in history). The citation must be from the current head revision.",
             wire.RetireMemoryEntryRequest, MemoryApi.retire_memory_entry, read_only=False),
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
        annotations=types.ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=False,
                                          idempotent_hint=spec.read_only, open_world_hint=False),
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return {"items": [_jsonable(item) for item in value]}
    return value


def _error(failure: Failure) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=tool_error_text(failure))],
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
        return _error(Failure(422, "invalid_request", problems))
    try:
        result = _jsonable(await spec.call(api, request))
    except Exception as error:  # noqa: BLE001 - mapped to the tool error the agent reads
        failure = failure_for(error)
        if failure.status >= 500 and failure.code == "internal_error":
            log.exception("tool %s failed", name)
        return _error(failure)
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(result, ensure_ascii=False))],
                                structured_content=result)


def build_server(api: MemoryApi) -> Server[Any]:
    """The low-level MCP server over ``api``; transports (stdio, streamable HTTP) are chosen by the caller."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tool_list()))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(api, params.name, params.arguments or {})

    return Server("pcmem", version=pcmem.__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)

