"""A JSON schema's properties as a Markdown table (name, type, required, default and bounds, description)."""

from __future__ import annotations

import json
import re
from typing import Any

_RST_LITERAL = re.compile(r"``([^`]+)``")
_BOUNDS = (("minimum", "≥ {}"), ("maximum", "≤ {}"), ("exclusiveMinimum", "> {}"), ("exclusiveMaximum", "< {}"),
           ("minLength", "length ≥ {}"), ("maxLength", "length ≤ {}"), ("minItems", "≥ {} items"),
           ("maxItems", "≤ {} items"), ("format", "{}"), ("pattern", "pattern `{}`"))


def properties_table(schema: dict[str, Any], definitions: dict[str, Any] | None = None) -> str:
    """``schema``'s properties (``$ref``s resolved against ``definitions``) as a table; "none" when it has none."""
    definitions = definitions or {}
    properties = resolved(schema, definitions).get("properties", {})
    if not properties:
        return "No arguments."
    required = set(resolved(schema, definitions).get("required", ()))
    rows = ["| name | type | | description |", "|---|---|---|---|"]
    for name, node in properties.items():
        node = resolved(node, definitions)
        notes = ["required" if name in required else "optional"]
        if "default" in node:
            notes.append(f"default `{json.dumps(node['default'], ensure_ascii=False)}`")
        notes += [template.format(node[key]) for key, template in _BOUNDS if key in node]
        rows.append(f"| `{name}` | {type_of(node, definitions)} | {', '.join(notes)} | "
                    f"{cell(node.get('description', ''))} |")
    return "\n".join(rows)


def type_of(node: dict[str, Any], definitions: dict[str, Any]) -> str:
    """A property's type in a few words: ``string``, ``array of integer``, ``"auto" \\| "fts"``, a model's name."""
    if "$ref" in node:
        return f"`{node['$ref'].rsplit('/', 1)[-1]}`"
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " or ".join(type_of(option, definitions) for option in node[key])
    kind = node.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and "items" in node:
        return f"array of {type_of(node['items'], definitions)}"
    return kind


def resolved(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node and node["$ref"].rsplit("/", 1)[-1] in definitions:
        return {**definitions[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def cell(text: str) -> str:
    """One table cell: one line, ``rst literals`` as Markdown code, pipes escaped."""
    return _RST_LITERAL.sub(r"`\1`", " ".join(str(text).split())).replace("|", "\\|")
