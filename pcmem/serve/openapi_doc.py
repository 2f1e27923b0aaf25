"""What ``/openapi.json`` says beyond the routes' models: the request-id header every answer carries and, when the
server requires a token, the bearer scheme (PowerContext 1.4.1 names them ``RequestId`` and ``BearerAuth``).

Both are facts of the ASGI middleware (:mod:`pcmem.serve.middleware`), which FastAPI cannot see, so they are added
to the document FastAPI generates, once, when it is first asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from pcmem.serve.middleware import PUBLIC_PATHS, REQUEST_ID_HEADER

_REQUEST_ID = {"description": "Opaque identifier for correlating one request (also in the server's log lines).",
               "schema": {"type": "string"}}
_BEARER_CHALLENGE = {"description": "Authentication scheme required by the Server.",
                     "schema": {"type": "string", "example": "Bearer"}}
_BEARER_AUTH = {"type": "http", "scheme": "bearer",
                "description": "The token of the file pcmem serve was started with (--token-file)."}


def install(app: FastAPI, *, token_required: bool) -> None:
    """Make ``app.openapi()`` document the request-id header and (with ``token_required``) the bearer scheme."""
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _documented(generate(), token_required=token_required)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to customise the document


def _documented(schema: dict[str, Any], *, token_required: bool) -> dict[str, Any]:
    components = schema.setdefault("components", {})
    headers = components.setdefault("headers", {})
    headers["RequestId"] = _REQUEST_ID
    for path, item in schema.get("paths", {}).items():
        for operation in item.values():
            for status, response in operation.get("responses", {}).items():
                response.setdefault("headers", {})[REQUEST_ID_HEADER] = {"$ref": "#/components/headers/RequestId"}
                if token_required and status == "401":
                    headers["BearerChallenge"] = _BEARER_CHALLENGE
                    response["headers"]["WWW-Authenticate"] = {"$ref": "#/components/headers/BearerChallenge"}
            if token_required and path in PUBLIC_PATHS:
                operation["security"] = []  # liveness stays public
    if token_required:
        components.setdefault("securitySchemes", {})["BearerAuth"] = _BEARER_AUTH
        schema["security"] = [{"BearerAuth": []}]
    return schema
