"""The MCP tools as an MCP host sees them: the list ``pcmem mcp`` and ``/mcp`` serve (names, descriptions, hints and
input schemas from :func:`pcmem.serve.mcp_tools.tool_list`, built from the declarations in :mod:`pcmem.serve.tools`)
and the instructions the server gives the model."""

from __future__ import annotations

from docsgen.schema_table import cell, properties_table


def reference() -> str:
    from pcmem.serve.mcp_tools import tool_list
    from pcmem.serve.tools import INSTRUCTIONS

    parts = ["### What the server tells the model", "", f"> {cell(INSTRUCTIONS)}"]
    for tool in tool_list():
        parts += ["", f"### {tool.name}", "", cell(tool.description or ""), "",
                  f"Changes the store: {_changes(tool)}. Hints: {_hints(tool)}.", ""]
        parts.append(properties_table(tool.input_schema))
    return "\n".join(parts) + "\n"


def _changes(tool) -> str:  # noqa: ANN001 - the SDK's Tool
    hints = tool.annotations
    if hints is None or hints.read_only_hint:
        return "no"
    return "yes, erases for good" if hints.destructive_hint else "yes"


def _hints(tool) -> str:  # noqa: ANN001 - the SDK's Tool
    hints = tool.annotations
    if hints is None:
        return "none"
    said = {"read-only": hints.read_only_hint, "destructive": hints.destructive_hint,
            "idempotent": hints.idempotent_hint, "open world": hints.open_world_hint}
    return ", ".join(f"{name} {'yes' if value else 'no'}" for name, value in said.items() if value is not None)
