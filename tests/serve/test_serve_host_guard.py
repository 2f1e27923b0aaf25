"""DNS rebinding: every route of `pcmem serve` checks Host (and Origin when one is sent), not only /mcp.

A web page on the same laptop can point its own name at 127.0.0.1 (DNS rebinding) and call the server: the request
then carries the page's name in Host. Each test runs a real uvicorn server on loopback (in-process, and the real
`pcmem serve` process for --allow-host) and sends the headers such a page would.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx
import pytest

import pcmem

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402

SECRET = "The vault combination is 31-41-59."
ROUTES = [
    ("POST", "/v1/memory/entries/list", {"scope_id": "vault"}),
    ("POST", "/v1/memory/search", {"scope_id": "vault", "query": "vault combination"}),
    ("POST", "/v1/memory/remember", {"scope_id": "vault", "kind": "fact", "text": "written by a stranger"}),
    ("POST", "/v1/memory/changes", {"scope_id": "vault", "since_revision": 0}),
    ("GET", "/x/pcmem/health", None),
    ("GET", "/x/pcmem/scopes", None),
    ("GET", "/health/live", None),
    ("GET", "/openapi.json", None),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):  # noqa: ANN201
    path = tmp_path_factory.mktemp("hosts") / "memory.duckdb"
    runtime = pcmem.open(path, embedder=None)
    runtime.memory.for_scope("vault").remember(SECRET)
    api = MemoryApi(runtime, path)
    live = LiveServer(create_app(api, ServeOptions(cors_origins=("http://app.example",)))).start()
    live.runtime, live.path = runtime, path
    yield live
    live.stop()
    api.close()
    runtime.close()


def _send(url: str, method: str, path: str, body: dict | None, **headers: str) -> httpx.Response:
    headers.setdefault("content-type", "application/json")
    headers.setdefault("accept", "application/json, text/event-stream")
    return httpx.request(method, url + path, content=None if body is None else json.dumps(body),
                         headers=headers, timeout=30)


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[route[1] for route in ROUTES])
def test_a_foreign_host_is_refused_on_every_route(served, method, path, body):
    response = _send(served.url, method, path, body, host=f"evil.example:{_port(served.url)}")
    assert response.status_code == 421, response.text
    error = response.json()["error"]
    assert error["code"] == "host_not_allowed" and "--allow-host" in error["message"]
    assert SECRET not in response.text and str(served.path) not in response.text
    assert response.headers["x-powercontext-request-id"], "the refusal carries the request id like every error"


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[route[1] for route in ROUTES])
def test_a_foreign_origin_is_refused_on_every_route(served, method, path, body):
    response = _send(served.url, method, path, body, origin="http://evil.example")
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "origin_not_allowed"


def test_a_rebinding_page_writes_nothing(served):
    scope = served.runtime.memory.for_scope("vault")
    before = scope.head()
    port = _port(served.url)
    for headers in ({"host": f"evil.example:{port}"}, {"host": f"evil.example:{port}", "origin": "http://evil.example"},
                    {"origin": f"http://evil.example:{port}"}, {"origin": "null"}):
        response = _send(served.url, "POST", "/v1/memory/remember",
                         {"scope_id": "vault", "kind": "fact", "text": "planted"}, **headers)
        assert response.status_code in (403, 421), (headers, response.text)
    assert scope.head() == before


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "127.0.0.1", "localhost"])
def test_loopback_names_and_same_origin_pages_are_served(served, host):
    port = _port(served.url)
    response = _send(served.url, "POST", "/v1/memory/entries/list", {"scope_id": "vault"}, host=host.format(port=port))
    assert response.status_code == 200, response.text
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", "http://app.example"):
        page = _send(served.url, "POST", "/v1/memory/entries/list", {"scope_id": "vault"}, origin=origin)
        assert page.status_code == 200, (origin, page.text)
        assert SECRET in [entry["text"] for entry in page.json()["entries"]]


def test_mcp_is_guarded_by_the_same_decision(served):
    """/mcp used to run its own copy of the check (the MCP SDK's); an allowed name must pass there too."""
    port = _port(served.url)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    for host in (f"localhost:{port}", "localhost"):
        response = _send(served.url, "POST", "/mcp", initialize, host=host)
        assert response.status_code == 200, (host, response.text)


def test_ipv6_loopback_is_allowed_and_the_bound_name_too(tmp_path):
    runtime = pcmem.open(tmp_path / "m.duckdb", embedder=None)
    api = MemoryApi(runtime, tmp_path / "m.duckdb")
    options = ServeOptions(allowed_hosts=("memory.internal", "Proxy.Example:8443", "::1"))
    try:
        with LiveServer(create_app(api, options)) as live:
            port = _port(live.url)
            for host in (f"[::1]:{port}", "[::1]", f"memory.internal:{port}", "Memory.Internal", "proxy.example:443"):
                assert _send(live.url, "GET", "/x/pcmem/scopes", None, host=host).status_code == 200, host
            for host in ("", "memory.internal.evil.example", f"127.0.0.1.evil.example:{port}", "[::1]x"):
                assert _send(live.url, "GET", "/x/pcmem/scopes", None, host=host).status_code == 421, host
    finally:
        api.close()
        runtime.close()


def test_pcmem_serve_allow_host_option(tmp_path):
    """The real `pcmem serve`: a foreign name is refused until --allow-host names it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pcmem", "--db", str(tmp_path / "m.duckdb"), "serve", "--port", "0",
         "--json", "--allow-host", "memory.lan"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(process.stdout.readline())["url"]
        port = _port(url)
        body = {"scope_id": "s", "kind": "fact", "text": "served under a real name"}
        assert _send(url, "POST", "/v1/memory/remember", body, host=f"memory.lan:{port}").status_code == 200
        refused = _send(url, "POST", "/v1/memory/remember", body, host=f"evil.example:{port}")
        assert refused.status_code == 421 and refused.json()["error"]["code"] == "host_not_allowed"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)
