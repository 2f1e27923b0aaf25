"""`pcmem serve` over real HTTP: a uvicorn server on an ephemeral loopback port, driven with httpx.

The store is a real DuckDB file searched full-text only (``embedder=None``: the embedder is not what these tests are
about). A scripted reranker stands in for the model where a test needs a rerank to fail or to wait; the real
SmolLM2 rerank through the server is in test_serve_rerank_llama.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading

import httpx
import pytest
from click.testing import CliRunner

import pcmem
from pcmem import MemoryRerankDecision
from pcmem.errors import InferenceTimeoutError, InferenceUnavailableError

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.live import LiveServer  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402

REQUEST_ID = "x-powercontext-request-id"
SECRET_TEXT = "the vault combination is 31-41-59"
TOKEN = "t0ken-for-tests-0123456789abcdef"


class ScriptedReranker:
    """Keeps coarse order, except for queries naming a failure; ``block`` waits until the test releases it."""

    policy_id = "test.scripted"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001
        if "timeout" in query:
            raise InferenceTimeoutError("generation ran past 30 s")
        if "unavailable" in query:
            raise InferenceUnavailableError("the model is not loaded")
        if "crash" in query:
            raise RuntimeError(f"a bug that quotes a candidate: {candidates[0].text}")
        if "block" in query:
            self.entered.set()
            assert self.release.wait(60)
        return MemoryRerankDecision(selected_ranks=tuple(range(1, min(limit, len(candidates)) + 1)))


def _start(db_path, reranker=None, **options):  # noqa: ANN001, ANN202
    runtime = pcmem.open_sync(db_path, embedder=None, reranker=reranker)
    api = MemoryApi(runtime, db_path)
    server = LiveServer(create_app(api, ServeOptions(**options))).start()
    return runtime, api, server


@pytest.fixture(scope="module")
def reranker() -> ScriptedReranker:
    return ScriptedReranker()


@pytest.fixture(scope="module")
def server(tmp_path_factory, reranker):  # noqa: ANN001, ANN201
    runtime, api, live = _start(tmp_path_factory.mktemp("serve") / "memory.duckdb", reranker, max_body_bytes=64 * 1024)
    live.runtime = runtime  # the served runtime, for operations v1 has no route for (forget)
    yield live
    live.stop()
    api.close()
    runtime.close()


@pytest.fixture
def client(server):  # noqa: ANN001, ANN201
    with httpx.Client(base_url=server.url, timeout=60) as opened:
        yield opened


def post(client: httpx.Client, path: str, body: dict, status: int = 200) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    assert response.headers[REQUEST_ID]
    return response.json()


def error_of(client: httpx.Client, path: str, body: dict, status: int) -> dict:
    payload = post(client, path, body, status)
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message", "details"}
    return payload["error"]


def remember(client: httpx.Client, scope: str, text: str, **extra) -> dict:
    return post(client, "/v1/memory/remember", {"scope_id": scope, "kind": "fact", "text": text, **extra})


# --- every v1 endpoint ---------------------------------------------------------------------------------------


def test_v1_memory_round_trip(client):
    first = remember(client, "trip", "The team deploys on Fridays.", reason="from the kickoff")
    assert first["memory"]["family"] == "memory" and first["memory"]["revision"] == 1
    entry = first["entry"]
    assert (entry["version"], entry["kind"], entry["state"], entry["source_refs"]) == (1, "fact", "active", [])
    remember(client, "trip", "Marco drinks oolong tea.", expected_revision=1)

    page = post(client, "/v1/memory/search", {"scope_id": "trip", "query": "deploy Fridays", "limit": 5})
    assert set(page) == {"memory", "mode", "hits"}, "v1 search carries no rerank trace"
    assert page["mode"] == "fts" and page["memory"]["revision"] == 2
    [hit] = page["hits"]
    assert set(hit) == {"citation", "text", "score", "matched_by"} and hit["matched_by"] == ["fts"]
    assert 0 <= hit["score"] <= 1 and hit["text"] == "The team deploys on Fridays."

    listed = post(client, "/v1/memory/entries/list", {"scope_id": "trip"})
    assert [e["text"] for e in listed["entries"]] == sorted(
        ["The team deploys on Fridays.", "Marco drinks oolong tea."], key=lambda t: [
            e["citation"]["entry_id"] for e in listed["entries"] if e["text"] == t][0])
    got = post(client, "/v1/memory/entries/get", {"scope_id": "trip", "citation": hit["citation"]})
    assert got["text"] == "The team deploys on Fridays." and got["citation"] == hit["citation"]

    revised = post(client, "/v1/memory/entries/revise", {
        "scope_id": "trip", "citation": hit["citation"], "kind": "decision", "text": "The team deploys on Thursdays.",
        "reason": "moved"})
    assert revised["memory"]["revision"] == 3
    assert (revised["entry"]["version"], revised["entry"]["kind"]) == (2, "decision")

    retired = post(client, "/v1/memory/entries/retire", {
        "scope_id": "trip", "citation": revised["entry"]["citation"], "reason": "obsolete"})
    assert retired["memory"]["revision"] == 4 and retired["entry"]["state"] == "inactive"
    active = post(client, "/v1/memory/entries/list", {"scope_id": "trip"})["entries"]
    everything = post(client, "/v1/memory/entries/list", {"scope_id": "trip", "include_inactive": True})["entries"]
    assert (len(active), len(everything)) == (1, 2)

    changes = post(client, "/v1/memory/changes", {"scope_id": "trip", "since_revision": 0})
    ops = [(r["memory_ref"]["revision"], [c["op"] for c in r["changes"]]) for r in changes["revisions"]]
    assert ops == [(1, ["add"]), (2, ["add"]), (3, ["revise"]), (4, ["deactivate"])]
    revise_change = changes["revisions"][2]["changes"][0]
    assert revise_change["from_entry_version_id"] == hit["citation"]["entry_version_id"]
    assert revise_change["to_entry_version_id"] == revised["entry"]["citation"]["entry_version_id"]
    later = post(client, "/v1/memory/changes", {"scope_id": "trip", "since_revision": 2})
    assert [r["memory_ref"]["revision"] for r in later["revisions"]] == [3, 4]
    assert later["revisions"][0]["changes"][0]["from_entry_version_id"] == hit["citation"]["entry_version_id"]
    assert post(client, "/v1/memory/changes", {"scope_id": "trip", "since_revision": 4})["revisions"] == []


def test_a_scope_without_memory_reads_as_empty(client):
    assert post(client, "/v1/memory/search", {"scope_id": "nobody", "query": "x"}) == {
        "memory": None, "mode": None, "hits": []}
    assert post(client, "/v1/memory/entries/list", {"scope_id": "nobody"}) == {"memory": None, "entries": []}
    assert post(client, "/v1/memory/changes", {"scope_id": "nobody"}) == {"memory": None, "revisions": []}


# --- errors --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    {"scope_id": "s", "query": "q", "extra": 1},
    {"scope_id": "s", "query": ""},
    {"scope_id": "   ", "query": "q"},
    {"scope_id": "s", "query": "q", "limit": 51},
    {"scope_id": "s", "query": "q", "mode": "semantic"},
    {"scope_id": "s", "query": "x" * 8193},
    {"query": "q"},
])
def test_invalid_search_requests_are_422(client, body):
    error = error_of(client, "/v1/memory/search", body, 422)
    assert error["code"] == "invalid_request" and error["details"]["errors"]


def test_validation_errors_never_echo_the_input(client):
    error = error_of(client, "/v1/memory/remember", {"scope_id": "s", "kind": "fact", "text": SECRET_TEXT,
                                                     "bogus": SECRET_TEXT}, 422)
    assert SECRET_TEXT not in str(error)


def test_nested_additional_properties_and_bad_json_are_422(client):
    citation = {"memory_ref": {"family": "memory", "artifact_id": "a", "revision": 1, "x": 1},
                "entry_id": "e", "entry_version_id": "v"}
    assert error_of(client, "/v1/memory/entries/get", {"scope_id": "s", "citation": citation}, 422)["code"] == \
        "invalid_request"
    response = client.post("/v1/memory/search", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def test_text_over_8192_utf8_bytes_is_422(client):
    error = error_of(client, "/v1/memory/remember", {"scope_id": "big", "kind": "fact", "text": "é" * 4097}, 422)
    assert error["code"] == "invalid_request" and "8192" in error["message"]


def test_stale_revisions_are_409_revision_conflict(client):
    first = remember(client, "cas", "Version one of the plan.")
    error = error_of(client, "/v1/memory/remember",
                     {"scope_id": "cas", "kind": "fact", "text": "x", "expected_revision": 5}, 409)
    assert error["code"] == "revision_conflict"
    assert error["details"] == {"expected_revision": 5, "head_revision": 1}
    remember(client, "cas", "Another entry moves the head.")
    stale = first["entry"]["citation"]
    error = error_of(client, "/v1/memory/entries/revise",
                     {"scope_id": "cas", "citation": stale, "kind": "fact", "text": "Version two."}, 409)
    assert error["code"] == "revision_conflict"
    assert error_of(client, "/v1/memory/entries/retire", {"scope_id": "cas", "citation": stale}, 409)["code"] == \
        "revision_conflict"


def test_revising_a_retired_entry_is_409_memory_entry_inactive(client):
    written = remember(client, "inactive", "Soon retired.")
    retired = post(client, "/v1/memory/entries/retire", {"scope_id": "inactive", "citation": written["entry"]["citation"]})
    head_citation = retired["entry"]["citation"]
    error = error_of(client, "/v1/memory/entries/revise",
                     {"scope_id": "inactive", "citation": head_citation, "kind": "fact", "text": "Back."}, 409)
    assert error["code"] == "memory_entry_inactive"


def test_unknown_scopes_entries_and_routes_are_404(client):
    written = remember(client, "known", "An entry to cite.")
    citation = written["entry"]["citation"]
    for scope, changed in [("unknown-scope", {}), ("known", {"entry_id": "ent_missing"}),
                           ("known", {"entry_version_id": "ver_missing"}),
                           ("known", {"memory_ref": {**citation["memory_ref"], "revision": 99}}),
                           ("known", {"memory_ref": {**citation["memory_ref"], "family": "skill"}})]:
        body = {"scope_id": scope, "citation": {**citation, **changed}}
        assert error_of(client, "/v1/memory/entries/get", body, 404)["code"] == "memory_not_found", changed
        revise = {**body, "kind": "fact", "text": "new"}
        assert error_of(client, "/v1/memory/entries/revise", revise, 404)["code"] == "memory_not_found"
    assert error_of(client, "/x/pcmem/entries/history", {"scope_id": "known", "entry_id": "nope"}, 404)["code"] == \
        "memory_not_found"
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert response.headers[REQUEST_ID]


def test_changes_since_a_revision_past_the_head_is_422(client):
    remember(client, "since", "One revision.")
    assert error_of(client, "/v1/memory/changes", {"scope_id": "since", "since_revision": 7}, 422)["code"] == \
        "invalid_request"


def test_a_forgotten_entry_reads_as_deactivated_in_v1_changes_and_is_404_by_citation(client, server):
    written = remember(client, "erase", "A pasted secret to forget.")
    entry = written["entry"]
    server.runtime.memory.for_scope("erase").forget(entry["citation"]["entry_id"])
    changes = post(client, "/v1/memory/changes", {"scope_id": "erase"})
    last = changes["revisions"][-1]["changes"]
    assert [(c["op"], c["entry_id"], c["to_entry_version_id"]) for c in last] == [
        ("deactivate", entry["citation"]["entry_id"], None)]
    listed = post(client, "/v1/memory/entries/list", {"scope_id": "erase", "include_inactive": True})
    assert all("secret" not in e["text"] for e in listed["entries"])
    assert error_of(client, "/v1/memory/entries/get", {"scope_id": "erase", "citation": entry["citation"]}, 404)


def test_an_unavailable_mode_is_422_capability_not_supported(client):
    remember(client, "modes", "Full-text only store.")
    error = error_of(client, "/v1/memory/search", {"scope_id": "modes", "query": "store", "mode": "vector"}, 422)
    assert error["code"] == "capability_not_supported" and error["details"] == {"capability": "vector"}


@pytest.mark.parametrize(("query", "status", "code"), [
    ("timeout please", 503, "inference_timeout"),
    ("unavailable please", 503, "inference_unavailable"),
    ("crash please", 500, "internal_error"),
])
def test_rerank_failures_fail_closed_with_powercontext_codes(client, caplog, query, status, code):
    remember(client, "fail", "timeout unavailable crash please: " + SECRET_TEXT)
    server_loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "pcmem.serve")]
    for logger in server_loggers:  # uvicorn's loggers do not propagate to the root, where caplog listens
        logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.DEBUG):
            error = error_of(client, "/v1/memory/search", {"scope_id": "fail", "query": query}, status)
    finally:
        for logger in server_loggers:
            logger.removeHandler(caplog.handler)
    assert error["code"] == code
    if code == "internal_error":
        assert error["message"] == "The Server failed." and error["details"] is None
        assert "internal error RuntimeError" in caplog.text, "a bug is logged, with its stack"
    assert SECRET_TEXT not in caplog.text, "entry text must never reach the logs"


def test_oversized_bodies_are_413(client):
    big = {"scope_id": "s", "kind": "fact", "text": "x" * (65 * 1024)}
    error = error_of(client, "/v1/memory/remember", big, 413)
    assert error["code"] == "request_too_large" and error["details"] == {"max_bytes": 64 * 1024}

    def chunks():  # no content-length: the limit holds for a streamed body too
        for _ in range(70):
            yield b"x" * 1024

    response = client.post("/v1/memory/remember", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.headers[REQUEST_ID]


# --- concurrency ---------------------------------------------------------------------------------------------


async def test_concurrent_requests_all_succeed_and_every_write_is_present(server):
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        async def one(i: int) -> httpx.Response:
            if i % 2:
                return await client.post("/v1/memory/search", json={"scope_id": "busy", "query": "note"})
            return await client.post("/v1/memory/remember",
                                     json={"scope_id": "busy", "kind": "fact", "text": f"note number {i}"})

        responses = await asyncio.gather(*(one(i) for i in range(32)))
        assert [r.status_code for r in responses] == [200] * 32
        ids = {r.headers[REQUEST_ID] for r in responses}
        assert len(ids) == 32, "every response has its own request id"
        listed = (await client.post("/v1/memory/entries/list", json={"scope_id": "busy"})).json()
        assert sorted(e["text"] for e in listed["entries"]) == sorted(f"note number {i}" for i in range(0, 32, 2))


def test_a_slow_rerank_does_not_block_other_requests(client, server, reranker):
    remember(client, "slow", "block this search for a while")
    result: dict = {}

    def slow_search() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as other:
            result["response"] = other.post("/v1/memory/search", json={"scope_id": "slow", "query": "block"})

    thread = threading.Thread(target=slow_search)
    thread.start()
    try:
        assert reranker.entered.wait(60), "the rerank started"
        # While the rerank holds its thread, other requests (reads, writes, coarse searches) are served.
        remember(client, "slow", "written while a rerank runs")
        assert len(post(client, "/v1/memory/entries/list", {"scope_id": "slow"})["entries"]) == 2
        assert post(client, "/x/pcmem/search", {"scope_id": "slow", "query": "written", "rerank": False})["hits"]
        assert "response" not in result, "the slow search is still waiting"
    finally:
        reranker.release.set()
        thread.join(60)
    assert result["response"].status_code == 200


# --- pcmem additions -----------------------------------------------------------------------------------------


def test_pcmem_extensions_scopes_history_traced_search_and_health(client, server):
    written = remember(client, "extras", "The release train leaves at noon.")
    entry_id = written["entry"]["citation"]["entry_id"]
    post(client, "/v1/memory/entries/revise", {"scope_id": "extras", "citation": written["entry"]["citation"],
                                                "kind": "fact", "text": "The release train leaves at one."})
    scopes = client.get("/x/pcmem/scopes").json()
    assert {"scope": "extras", "head_revision": 2} .items() <= next(s for s in scopes if s["scope"] == "extras").items()
    history = post(client, "/x/pcmem/entries/history", {"scope_id": "extras", "entry_id": entry_id})
    assert [(e["operation"], e["entry"]["version"]) for e in history["events"]] == [("remember", 1), ("revise", 2)]
    traced = post(client, "/x/pcmem/search", {"scope_id": "extras", "query": "release train"})
    assert traced["rerank"]["policy_id"] == "test.scripted"
    assert traced["rerank"]["selected_ranks"] == [1] and len(traced["rerank"]["candidates"]) == 1
    health = client.get("/x/pcmem/health").json()
    assert health["status"] == "ready" and health["store"].endswith("memory.duckdb")
    assert health["embedder"] is None and health["rerank_policy"] == "test.scripted"
    assert client.get("/health/live").json() == {"status": "ok"}


# --- OpenAPI ----------------------------------------------------------------------------------------------------

#: PowerContext's openapi/powercontext.yaml (oceanbase/powercontext): path → (operationId, request, 200 response).
POWERCONTEXT_V1 = {
    "/v1/memory/search": ("search_memory", "SearchMemoryRequest", "SearchMemoryResponse"),
    "/v1/memory/remember": ("remember_memory", "RememberMemoryRequest", "MemoryMutationResponse"),
    "/v1/memory/entries/list": ("list_memory_entries", "ListMemoryEntriesRequest", "ListMemoryEntriesResponse"),
    "/v1/memory/entries/get": ("get_memory_entry", "GetMemoryEntryRequest", "MemoryEntry"),
    "/v1/memory/entries/revise": ("revise_memory_entry", "ReviseMemoryEntryRequest", "MemoryMutationResponse"),
    "/v1/memory/entries/retire": ("retire_memory_entry", "RetireMemoryEntryRequest", "MemoryMutationResponse"),
    "/v1/memory/changes": ("list_memory_changes", "ListMemoryChangesRequest", "ListMemoryChangesResponse"),
}
#: schema → (properties, required), as in PowerContext's components.schemas.
POWERCONTEXT_SCHEMAS = {
    "SearchMemoryRequest": ({"scope_id", "query", "limit", "mode"}, {"scope_id", "query"}),
    "SearchMemoryResponse": ({"memory", "mode", "hits"}, {"hits"}),
    "SearchMemoryHit": ({"citation", "text", "score", "matched_by"}, {"citation", "text", "score", "matched_by"}),
    "MemoryCitation": ({"memory_ref", "entry_id", "entry_version_id"}, {"memory_ref", "entry_id", "entry_version_id"}),
    "ArtifactReference": ({"family", "artifact_id", "revision"}, {"family", "artifact_id", "revision"}),
    "RememberMemoryRequest": ({"scope_id", "kind", "text", "reason", "expected_revision"}, {"scope_id", "kind", "text"}),
    "MemoryMutationResponse": ({"memory", "entry"}, {"memory"}),
    "MemoryEntry": ({"citation", "version", "kind", "text", "state", "source_refs", "artifact_refs"},
                    {"citation", "version", "kind", "text", "state", "source_refs", "artifact_refs"}),
    "ListMemoryEntriesRequest": ({"scope_id", "include_inactive"}, {"scope_id"}),
    "ListMemoryEntriesResponse": ({"memory", "entries"}, {"entries"}),
    "GetMemoryEntryRequest": ({"scope_id", "citation"}, {"scope_id", "citation"}),
    "ReviseMemoryEntryRequest": ({"scope_id", "citation", "kind", "text", "reason"}, {"scope_id", "citation", "kind", "text"}),
    "RetireMemoryEntryRequest": ({"scope_id", "citation", "reason"}, {"scope_id", "citation"}),
    "ListMemoryChangesRequest": ({"scope_id", "since_revision"}, {"scope_id"}),
    "ListMemoryChangesResponse": ({"memory", "revisions"}, {"revisions"}),
    "MemoryRevisionChanges": ({"memory_ref", "changes"}, {"memory_ref", "changes"}),
    "EntryChange": ({"op", "entry_id", "from_entry_version_id", "to_entry_version_id", "reason"},
                    {"op", "entry_id", "from_entry_version_id", "to_entry_version_id", "reason"}),
    "ErrorResponse": ({"error"}, {"error"}),
    "ErrorDetail": ({"code", "message", "details"}, {"code", "message", "details"}),
}


def _ref(schema: dict) -> str:
    return schema["$ref"].rsplit("/", 1)[-1]


def test_openapi_v1_paths_operations_and_schemas_match_powercontext(client):
    spec = client.get("/openapi.json").json()
    for path, (operation_id, request, response) in POWERCONTEXT_V1.items():
        operation = spec["paths"][path]["post"]
        assert operation["operationId"] == operation_id
        assert _ref(operation["requestBody"]["content"]["application/json"]["schema"]) == request
        assert _ref(operation["responses"]["200"]["content"]["application/json"]["schema"]) == response
        for status in ("401", "413", "422", "500"):
            assert _ref(operation["responses"][status]["content"]["application/json"]["schema"]) == "ErrorResponse"
    schemas = spec["components"]["schemas"]
    for name, (properties, required) in POWERCONTEXT_SCHEMAS.items():
        assert set(schemas[name]["properties"]) == properties, name
        assert set(schemas[name].get("required", ())) == required, name
        assert schemas[name]["additionalProperties"] is False, name
    assert schemas["MemorySearchMode"]["enum"] == ["auto", "fts", "vector", "hybrid"]
    assert schemas["MemoryEntryState"]["enum"] == ["active", "inactive"]
    assert schemas["EntryChangeOperation"]["enum"] == ["add", "revise", "deactivate", "reactivate"]


# --- token, host, CORS --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def token_server(tmp_path_factory):  # noqa: ANN001, ANN201
    runtime, api, live = _start(tmp_path_factory.mktemp("token") / "memory.duckdb", token=TOKEN)
    yield live
    live.stop()
    api.close()
    runtime.close()


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}", "Bearer", TOKEN])
def test_without_a_valid_token_every_route_is_401(token_server, authorization):
    headers = {"authorization": authorization} if authorization else {}
    with httpx.Client(base_url=token_server.url, headers=headers) as client:
        for method, path in [("POST", "/v1/memory/search"), ("GET", "/x/pcmem/scopes"), ("GET", "/openapi.json"),
                             ("POST", "/mcp")]:
            response = client.request(method, path, json={"scope_id": "s", "query": "q"})
            assert response.status_code == 401, path
            assert response.json()["error"]["code"] == "unauthorized"
            assert response.headers["www-authenticate"] == "Bearer" and response.headers[REQUEST_ID]
        assert client.get("/health/live").status_code == 200, "liveness stays public, as in PowerContext"


def test_with_the_token_requests_pass(token_server):
    with httpx.Client(base_url=token_server.url, headers={"authorization": f"Bearer {TOKEN}"}) as client:
        remember(client, "auth", "Authorised write.")
        assert post(client, "/v1/memory/search", {"scope_id": "auth", "query": "authorised"})["hits"]


def test_no_cors_headers_unless_asked(client):
    response = client.options("/v1/memory/search", headers={"origin": "http://evil.example",
                                                            "access-control-request-method": "POST"})
    assert "access-control-allow-origin" not in response.headers


def test_serve_refuses_a_non_loopback_host_without_a_token(tmp_path):
    from pcmem.cli import main

    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.duckdb"), "serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "refusing to serve without --token-file" in result.output
    short = tmp_path / "token"
    short.write_text("short\n")
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.duckdb"), "serve", "--host", "0.0.0.0",
                                       "--token-file", str(short)])
    assert result.exit_code == 7 and "shorter than 16" in result.output


def test_loopback_detection():
    from pcmem.serve.middleware import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "192.168.1.4", "::", "example.com"]))


def test_the_cli_loads_no_server_code_until_serve_runs():
    import subprocess
    import sys

    probe = ("import sys, pcmem, pcmem.cli, pcmem.serve\n"
             "print(','.join(m for m in ('fastapi', 'uvicorn', 'mcp', 'starlette') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_cors_only_for_the_origins_asked_for(tmp_path):
    runtime, api, live = _start(tmp_path / "cors.duckdb", cors_origins=("http://app.example",))
    try:
        with httpx.Client(base_url=live.url) as client:
            preflight = {"access-control-request-method": "POST"}
            allowed = client.options("/v1/memory/search", headers={"origin": "http://app.example", **preflight})
            assert allowed.headers["access-control-allow-origin"] == "http://app.example"
            other = client.options("/v1/memory/search", headers={"origin": "http://evil.example", **preflight})
            assert "access-control-allow-origin" not in other.headers
    finally:
        live.stop()
        api.close()
        runtime.close()


WITHOUT_SERVE_EXTRA = """
import sys
for name in ("fastapi", "uvicorn", "mcp", "starlette", "mcp_types"):
    sys.modules[name] = None  # as if `pip install pcmem` without the serve extra
from pcmem.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("command", [["serve", "--dry-run"], ["mcp", "--json"], ["mcp"]])
def test_without_the_serve_extra_the_commands_name_it_in_one_line(tmp_path, command):
    import subprocess
    import sys

    pcmem.open_sync(tmp_path / "m.duckdb", embedder=None).close()
    done = subprocess.run([sys.executable, "-c", WITHOUT_SERVE_EXTRA, "--db", str(tmp_path / "m.duckdb"), *command],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == pcmem.ConfigurationError.exit_code, done.stderr
    assert done.stderr.strip().splitlines() == [
        "pcmem: error: `pcmem serve` and `pcmem mcp` need fastapi, uvicorn, mcp: pip install 'pcmem[serve]'"]
