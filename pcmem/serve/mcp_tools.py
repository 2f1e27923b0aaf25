"""The MCP tools (:mod:`pcmem.serve.tools` declares them) on the MCP SDK's low-level server.

Input schemas are the argument models cut short (:mod:`pcmem.serve.tool_schema`). A pcmem error becomes a tool
error (``is_error``) whose text names the PowerContext error code, the details as JSON and what the agent should do
next; it is not a protocol error, so the model sees it and can correct itself.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from pydantic import ValidationError

import pcmem
from pcmem.serve.errors import Failure, failure_for, tool_error_text
from pcmem.serve.operations import MemoryApi
from pcmem.serve.tool_schema import input_schema
from pcmem.serve.tools import INSTRUCTIONS, TOOL_NAMES, Tool, declared, named

log = logging.getLogger("pcmem.serve")

__all__ = ["TOOL_NAMES", "build_server", "call", "tool_list"]


def tool_list() -> tuple[types.Tool, ...]:
    """The declared tools as MCP lists them (a tool registered since the last call is listed too)."""
    return _listed(declared())


@functools.cache
def _listed(tools: tuple[Tool, ...]) -> tuple[types.Tool, ...]:
    """Built once per set of tools: the SDK lists the tools again on every call, and generating a model's schema each
    time would cost more than the call."""
    return tuple(_tool(tool) for tool in tools)


def _tool(tool: Tool) -> types.Tool:
    if tool.read_only:  # the other hints mean nothing for a tool that changes nothing
        hints = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    else:
        hints = types.ToolAnnotations(read_only_hint=False, destructive_hint=tool.destructive,
                                      idempotent_hint=tool.idempotent, open_world_hint=False)
    return types.Tool(name=tool.name, description=tool.description, input_schema=input_schema(tool.arguments),
                      annotations=hints)


def invalid_arguments(error: ValidationError) -> str:
    """pydantic's errors as one line naming each field and what is wrong with it."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {str(e['msg']).removeprefix('Value error, ')}"
                     for e in error.errors())


def _error(failure: Failure, tool: str = "") -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=tool_error_text(failure, tool))],
                                structured_content=failure.envelope(), is_error=True)


async def call(api: MemoryApi, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run one tool; every failure comes back as a tool error result, never as an exception."""
    tool = named(name)
    if tool is None:
        known = ", ".join(tool.name for tool in declared())
        return _error(Failure(404, "unknown_tool", f"no tool {name!r}; the tools are {known}"))
    try:
        request = tool.arguments.model_validate(arguments)
    except ValidationError as error:
        return _error(Failure(422, "invalid_request", invalid_arguments(error)), name)
    try:
        result = await tool.call(api, request)
    except Exception as error:  # noqa: BLE001 - mapped to the tool error the agent reads
        failure = failure_for(error)
        if failure.status >= 500 and failure.code == "internal_error":
            log.exception("tool %s failed", name)
        return _error(failure, name)
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)


def build_server(api: MemoryApi) -> Server[Any]:
    """The low-level MCP server over ``api``; transports (stdio, streamable HTTP) are chosen by the caller."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tool_list()))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(api, params.name, params.arguments or {})

    return Server("pcmem", version=pcmem.__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)
