"""Plain ASGI middleware around the whole server (HTTP routes and ``/mcp`` alike).

Outermost first: request id (``X-PowerContext-Request-ID`` on every response, errors included), host guard (Host and
Origin against DNS rebinding), bearer token (compared in constant time), request body limit (413 before the body
reaches a handler).
"""

from __future__ import annotations

import hmac
import json
import logging
import traceback
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("pcmem.serve")

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
#: Default request body limit: a remember is at most 8 KiB of text; 1 MiB leaves room for JSON and MCP framing.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: Paths that answer without a token (PowerContext keeps liveness public too).
PUBLIC_PATHS = frozenset({"/health/live"})
#: OAuth discovery documents (RFC 8414, RFC 9728) answer 404 without a token: an MCP client that gets 401 looks
#: there first, and must learn that this server takes a plain bearer token, not an OAuth flow.
NO_OAUTH_PREFIX = "/.well-known/"
UNAUTHORIZED_HINT = ("A bearer token is required: send the header `Authorization: Bearer TOKEN`, where TOKEN is the "
                     "content of the file `pcmem serve` was started with (--token-file); in an MCP host, put that "
                     "header in the server's configuration.")
#: JSON-RPC's server-defined error range (-32000..-32099): the request was not authorised.
JSONRPC_UNAUTHORIZED = -32001
#: The names every server answers to, on any port (IPv6 in brackets, as in a Host header).
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: Bind addresses that are no name at all (every interface): clients reach them under names given by --allow-host.
_WILDCARD_ADDRESSES = ("0.0.0.0", "::", "[::]")


async def send_error(send: Send, status: int, code: str, message: str, details: dict[str, Any] | None = None,
                     headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    await send_json(send, status, {"error": {"code": code, "message": message, "details": details}}, headers)


async def send_json(send: Send, status: int, payload: dict[str, Any],
                    headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def log_bug(error: BaseException, path: str, request_id: str | None) -> None:
    """Log a bug's type and stack (code lines only): its message may quote entry text, so it is left out."""
    log.error("internal error %s on %s (request %s)\n%s", type(error).__name__, path, request_id,
              "".join(traceback.format_tb(error.__traceback__)))


class RequestId:
    """Adds the request id to every response, and is the last stop for a bug, so the server never logs its message."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []),
                                                  (REQUEST_ID_HEADER.lower().encode(), request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as error:  # noqa: BLE001 - a bug; when a response started, the app answered and logged it
            if not started:
                log_bug(error, scope.get("path", ""), request_id)
                await send_error(send_with_id, 500, "internal_error", "The Server failed.")


class BearerToken:
    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self.app = app
        self._token = token.encode()

    def _allows(self, scope: Scope) -> bool:
        if scope["path"] in PUBLIC_PATHS or scope["path"].startswith(NO_OAUTH_PREFIX):
            return True
        header = dict(scope.get("headers", [])).get(b"authorization", b"")
        scheme, _, credential = header.partition(b" ")
        return scheme.lower() == b"bearer" and bool(credential) and hmac.compare_digest(credential.strip(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._allows(scope):
            await self.app(scope, receive, send)
            return
        challenge = [(b"www-authenticate", b"Bearer")]
        if scope["path"].rstrip("/") == "/mcp":
            # An MCP client shows a JSON-RPC error's message; for any other body it shows only "Server returned an
            # error response" (the MCP SDK), so the hint travels as one.
            await send_json(send, 401, {"jsonrpc": "2.0", "id": None, "error": {
                "code": JSONRPC_UNAUTHORIZED, "message": f"unauthorized: {UNAUTHORIZED_HINT}",
                "data": {"code": "unauthorized", "message": UNAUTHORIZED_HINT}}}, challenge)
            return
        await send_error(send, 401, "unauthorized", UNAUTHORIZED_HINT, headers=challenge)


class BodyLimit:
    """Reads the body up front (at most ``max_bytes``) and replays it, so no handler ever sees an oversized one."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _too_large(self, send: Send) -> None:
        await send_error(send, 413, "request_too_large", f"The request body exceeds {self.max_bytes} bytes.",
                         {"max_bytes": self.max_bytes})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(send)
            return
        if declared is None and b"transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body (e.g. the MCP GET stream): nothing to buffer
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._too_large(send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _host_name(name: str) -> str:
    """A bind address or --allow-host NAME as it appears in a Host header: lower case, IPv6 in brackets, no port
    (``--allow-host memory.lan:8765`` means memory.lan)."""
    import ipaddress

    name = name.strip().lower()
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return _name_in_host_header(name) or name
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def _name_in_host_header(header: str) -> str | None:
    """The name part of ``Host: NAME[:PORT]`` (lower case), or None when the header is not of that form."""
    header = header.lower()
    if header.startswith("["):
        name, _, rest = header.partition("]")
        name += "]"
    else:
        name, _, rest = header.partition(":")
        rest = ":" + rest if rest else ""
    if not name or name == "[]" or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
        return None
    return name


@dataclass(frozen=True)
class HostPolicy:
    """Which Host and Origin headers a request may carry: the one decision for every route, ``/mcp`` included.

    DNS rebinding: a web page on this machine points its own name at 127.0.0.1 and calls the server; the browser
    then sends the page's name in Host, so only names the server really answers to are served (the loopback names,
    the bound address, and ``--allow-host`` names; any port, like the MCP SDK's ``name:*``: a rebinding page is told
    apart by its name, never by its port). A browser also sends Origin on every cross-origin call (and on same-origin
    POSTs): it must be one of those names over http(s), or a ``--cors-origin``. Requests without Origin (curl, SDKs)
    are checked on Host alone.
    """

    names: frozenset[str]
    origins: frozenset[str] = frozenset()

    @classmethod
    def for_server(cls, bound_host: str, allowed_hosts: Iterable[str] = (),
                   cors_origins: Iterable[str] = ()) -> HostPolicy:
        names = {*LOOPBACK_NAMES, *(_host_name(name) for name in allowed_hosts if name.strip())}
        if _host_name(bound_host) not in _WILDCARD_ADDRESSES:
            names.add(_host_name(bound_host))
        return cls(frozenset(names), frozenset(origin.rstrip("/") for origin in cors_origins))

    def allows_host(self, header: str) -> bool:
        return _name_in_host_header(header) in self.names

    def allows_origin(self, origin: str) -> bool:
        if origin in self.origins:
            return True
        scheme, separator, authority = origin.partition("://")
        return scheme.lower() in ("http", "https") and bool(separator) and self.allows_host(authority)


class HostGuard:
    """Refuses, on every route, a request whose Host or Origin :class:`HostPolicy` does not allow (421 / 403)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin")
        if not self.policy.allows_host(host):
            await send_error(send, 421, "host_not_allowed",
                             f"The Host {host[:100]!r} is not a name this server answers to (DNS rebinding guard); "
                             "to serve under that name, start pcmem serve with --allow-host NAME.")
        elif origin is not None and not self.policy.allows_origin(origin.decode("latin-1")):
            await send_error(send, 403, "origin_not_allowed",
                             f"Web pages from {origin.decode('latin-1')[:100]!r} may not call this server; "
                             "--cors-origin ORIGIN allows a web app's origin.")
        else:
            await self.app(scope, receive, send)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
