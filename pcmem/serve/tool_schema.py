"""The input schema an agent reads for a tool: the argument model's JSON schema, cut to what a model and an MCP
client need.

Every agent pays for the tool list on every session, so the schema keeps types, enums, bounds, required fields and
the few descriptions a name does not already say, and drops pydantic's titles, ``null`` alternatives, defaults that
mean "absent", and ``$ref``s (inlined). Every property gets a top-level ``type``: MCP Inspector 0.15's CLI (what
``npm install`` gives on Node 20) converts a ``--tool-arg`` value from its text only when the property says its type,
and sent objects and numbers as strings for a bare ``$ref`` or an ``anyOf[..., null]``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

#: Keywords a property keeps; everything else pydantic writes (title, pattern, additionalProperties: true...) goes.
_KEPT = ("type", "description", "enum", "items", "minimum", "maximum", "minLength", "maxLength", "minItems",
         "maxItems", "format", "default")


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The compact JSON schema of a tool's argument model (see the module docstring)."""
    full = model.model_json_schema()
    definitions = full.get("$defs", {})
    properties = {name: _property(node, definitions) for name, node in full.get("properties", {}).items()}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if full.get("required"):
        schema["required"] = list(full["required"])
    schema["additionalProperties"] = False
    return schema


def _property(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    node = _resolved(node, definitions)
    options = [option for option in node.get("anyOf", ()) if option.get("type") != "null"]
    if len(options) == 1:  # X | None: the property is X (leaving it out is the None)
        node = {**_resolved(options[0], definitions), **{k: v for k, v in node.items() if k != "anyOf"}}
    compact = {key: node[key] for key in _KEPT if key in node}
    if "default" in compact and _means_absent(compact["default"]):
        del compact["default"]
    if "items" in compact:
        compact["items"] = _property(compact["items"], definitions)
    if "type" not in compact and "enum" in compact:
        compact["type"] = "string"
    return compact


def _resolved(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    if "$ref" not in node:
        return node
    target = definitions[node["$ref"].rsplit("/", 1)[-1]]
    return {**target, **{key: value for key, value in node.items() if key != "$ref"}}


def _means_absent(default: Any) -> bool:
    """Defaults that only say "absent" (None, False, an empty list or object): the name or the description already
    says what leaving the argument out does (``0`` is a real default, and ``0 == False`` in Python)."""
    return default is None or default is False or (isinstance(default, list | dict) and not default)
