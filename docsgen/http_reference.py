"""The HTTP routes of ``pcmem serve``, from the OpenAPI document its FastAPI app generates (``/openapi.json``): each
route's method, path, operation id, what it does, its request body's fields and its answers.

The app is built as ``pcmem serve`` builds it, over no store: building the routes opens nothing, and no request is
served. ``/mcp`` (the MCP transport, not an OpenAPI operation) is described by the page's own text.
"""

from __future__ import annotations

from typing import Any

from docsgen.schema_table import cell, properties_table

_GROUPS = (("PowerContext HTTP v1", "/v1/"), ("Health", "/health/"), ("pcmem's additions", "/x/pcmem/"))

def openapi_document() -> dict[str, Any]:
    from pcmem.serve.app import ServeOptions, create_app
    from pcmem.serve.operations import MemoryApi

    api = MemoryApi(None, "docs")  # type: ignore[arg-type]  # no store: only the routes are read
    try:
        return create_app(api, ServeOptions(mcp=False)).fastapi.openapi()  # type: ignore[attr-defined]
    finally:
        api.close()

def reference() -> str:
    document = openapi_document()
    definitions = document.get("components", {}).get("schemas", {})
    routes = [(path, method, operation) for path, item in document["paths"].items()
              for method, operation in item.items()]
    parts = [f"Generated from the OpenAPI document of pcmem {document['info']['version']} "
             f"({len(routes)} operations; the server serves it at `/openapi.json`)."]
    for title, prefix in _GROUPS:
        chosen = [route for route in routes if route[0].startswith(prefix)]
        parts += ["", f"## {title}", "", "| route | operation | what it does |", "|---|---|---|"]
        parts += [f"| [`{method.upper()} {path}`](#{_anchor(operation)}) | `{operation['operationId']}` | "
                  f"{cell(_first_line(operation))} |" for path, method, operation in chosen]
        for path, method, operation in chosen:
            parts += ["", f"### {method.upper()} {path} {{#{_anchor(operation)}}}", "", _described(operation)]
            parts += _body(operation, definitions) + _parameters(operation) + _answers(operation)
    return "\n".join(parts) + "\n"

def _anchor(operation: dict[str, Any]) -> str:
    return "op-" + operation["operationId"].replace("_", "-")

def _first_line(operation: dict[str, Any]) -> str:
    return (operation.get("description") or operation.get("summary") or "").split("\n\n")[0]

def _described(operation: dict[str, Any]) -> str:
    text = operation.get("description") or operation.get("summary") or ""
    return f"`{operation['operationId']}`: " + " ".join(text.split())

def _body(operation: dict[str, Any], definitions: dict[str, Any]) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return []
    schema = content["schema"]
    name = schema.get("$ref", "").rsplit("/", 1)[-1] or "the body"
    return ["", f"Request body `{name}`:", "", properties_table(schema, definitions)]

def _parameters(operation: dict[str, Any]) -> list[str]:
    parameters = operation.get("parameters", [])
    if not parameters:
        return []
    rows = ["", "| parameter | in | |", "|---|---|---|"]
    rows += [f"| `{parameter['name']}` | {parameter['in']} | "
             f"{'required' if parameter.get('required') else 'optional'} |" for parameter in parameters]
    return rows

def _answers(operation: dict[str, Any]) -> list[str]:
    answers = []
    for status, response in sorted(operation.get("responses", {}).items()):
        schema = response.get("content", {}).get("application/json", {}).get("schema", {})
        model = schema.get("$ref", "").rsplit("/", 1)[-1]
        answers.append(f"{status} {cell(response.get('description', ''))}" + (f" (`{model}`)" if model else ""))
    return ["", "Answers: " + "; ".join(answers) + "."] if answers else []

def route_list() -> list[str]:
    """``METHOD /path`` of every operation, for tests."""
    return [f"{method.upper()} {path}" for path, item in openapi_document()["paths"].items() for method in item]
