"""`pcmem serve` over real HTTP: a uvicorn server on an ephemeral loopback port, driven with httpx.

The store is a real DuckDB file searched full-text only (``embedder=None``: the embedder is not what these tests are
about). A scripted reranker stands in for the model where a test needs a rerank to fail or to wait; the real
SmolLM2 rerank through the server is in test_serve_rerank_llama.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

import pcmem
from pcmem import MemoryRerankDecision, validation
from pcmem.errors import InferenceTimeoutError, InferenceUnavailableError, InputError

pytest.importorskip("fastapi")
pytest.importorskip("mcp")
jsonschema = pytest.importorskip("jsonschema")

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
    runtime = pcmem.open(db_path, embedder=None, reranker=reranker)
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


def citation_of(server, scope: str, record: dict, revision: int | None = None) -> dict:  # noqa: ANN001
    """The v1 citation of a 1.4.1 record (records name the entry, not a citation: read it from the store)."""
    cited = server.runtime.memory.for_scope(scope).get_entry(record["artifact"]["artifact_id"], revision).citation
    return {"memory_ref": {"family": "memory", "artifact_id": cited.artifact_id, "revision": cited.revision},
            "entry_id": cited.entry_id, "entry_version_id": cited.entry_version_id}


def test_v1_memory_round_trip(client, server):
    first = remember(client, "trip", "The team deploys on Fridays.", reason="from the kickoff")
    assert first["changed"] is True
    [record] = first["records"]
    assert record["artifact"]["family"] == "memory" and record["artifact"]["revision"] == 1
    assert (record["kind"], record["state"], record["state_version"], record["merged_into_id"]) == (
        "fact", "active", 1, None)
    remember(client, "trip", "Marco drinks oolong tea.", expected_revision=1)

    page = post(client, "/v1/memory/search", {"scope_id": "trip", "query": "deploy Fridays", "limit": 5})
    assert set(page) == {"mode", "hits"}, "v1 search carries no rerank trace"
    assert page["mode"] == "text"
    [hit] = page["hits"]
    assert set(hit) == {"memory", "score", "matched_by"} and hit["matched_by"] == ["text"]
    assert hit["memory"]["text"] == "The team deploys on Fridays."

    listed = post(client, "/v1/memory/entries/list", {"scope_id": "trip"})
    assert len(listed["entries"]) == 2 and listed["next_cursor"] is None
    paged = post(client, "/v1/memory/entries/list", {"scope_id": "trip", "limit": 1})
    rest = post(client, "/v1/memory/entries/list", {"scope_id": "trip", "limit": 1, "cursor": paged["next_cursor"]})
    assert [e["text"] for e in paged["entries"] + rest["entries"]] == [e["text"] for e in listed["entries"]]
    entry_id = record["artifact"]["artifact_id"]
    target = {"type": "memory_entry", "family": "memory", "artifact_id": entry_id, "entry_id": entry_id}
    got = post(client, "/v1/memory/entries/get", {"scope_id": "trip", "target": target})
    assert got["text"] == "The team deploys on Fridays."
    citation = citation_of(server, "trip", record)
    assert post(client, "/v1/memory/entries/get", {"scope_id": "trip", "citation": citation}) == got

    revised = post(client, "/v1/memory/entries/revise", {
        "scope_id": "trip", "citation": citation, "kind": "decision", "text": "The team deploys on Thursdays.",
        "reason": "moved"})
    [new] = revised["records"]
    assert (new["artifact"]["revision"], new["kind"], new["state_version"]) == (2, "decision", 3)

    retired = post(client, "/v1/memory/entries/retire", {
        "scope_id": "trip", "citation": citation_of(server, "trip", new), "reason": "obsolete"})
    assert retired["records"][0]["state"] == "retired"
    active = post(client, "/v1/memory/entries/list", {"scope_id": "trip"})["entries"]
    everything = post(client, "/v1/memory/entries/list", {"scope_id": "trip", "include_inactive": True})["entries"]
    assert (len(active), len(everything)) == (1, 2)

    changes = post(client, "/v1/memory/changes", {"scope_id": "trip", "since_revision": 0})
    ops = [(r["memory_ref"]["revision"], [c["op"] for c in r["changes"]]) for r in changes["revisions"]]
    assert ops == [(1, ["add"]), (2, ["add"]), (3, ["revise"]), (4, ["deactivate"])]
    reasons = [[c["reason"] for c in r["changes"]] for r in changes["revisions"]]
    assert reasons == [["from the kickoff"], [None], ["moved"], ["obsolete"]], "each write's reason, as it gave it"
    revise_change = changes["revisions"][2]["changes"][0]
    assert revise_change["from_entry_version_id"] == citation["entry_version_id"]
    later = post(client, "/v1/memory/changes", {"scope_id": "trip", "since_revision": 2})
    assert [r["memory_ref"]["revision"] for r in later["revisions"]] == [3, 4]
    assert post(client, "/v1/memory/changes", {"scope_id": "trip", "since_revision": 4})["revisions"] == []
    # PowerContext: without since_revision, the head revision's changes only.
    head_only = post(client, "/v1/memory/changes", {"scope_id": "trip"})
    assert [r["memory_ref"]["revision"] for r in head_only["revisions"]] == [4]


def test_a_scope_without_memory_reads_as_empty(client):
    assert post(client, "/v1/memory/search", {"scope_id": "nobody", "query": "x"}) == {"mode": "text", "hits": []}
    assert post(client, "/v1/memory/entries/list", {"scope_id": "nobody"}) == {"entries": [], "next_cursor": None}
    assert post(client, "/v1/memory/changes", {"scope_id": "nobody"}) == {"memory": None, "revisions": []}
    # PowerContext answers 200 and nothing for a since_revision on a scope without Memory.
    assert post(client, "/v1/memory/changes", {"scope_id": "nobody", "since_revision": 3}) == {
        "memory": None, "revisions": []}


@pytest.mark.parametrize("body", [
    {"scope_id": "s", "since_revision": False},
    {"scope_id": "s", "since_revision": "1"},
])
def test_changes_refuses_coerced_values(client, body):
    assert error_of(client, "/v1/memory/changes", body, 422)["code"] == "invalid_request"


def test_list_refuses_coerced_values(client):
    for body in ({"scope_id": "s", "include_inactive": 0}, {"scope_id": "s", "limit": "5"}):
        assert error_of(client, "/v1/memory/entries/list", body, 422)["code"] == "invalid_request"


def test_flush_capacity_readiness_and_capabilities(client):
    remember(client, "flush", "Nothing is ever pending.")
    flushed = post(client, "/v1/memory/flush", {"scope_id": "flush"})
    assert flushed["status"] == "idle" and flushed["memory"]["revision"] == 1
    assert error_of(client, "/v1/memory/capacity", {"scope_id": "flush"}, 422)["code"] == "capability_not_supported"
    assert client.get("/health/ready").json()["status"] == "ready"
    capabilities = client.get("/v1/capabilities").json()
    assert capabilities["artifact_families"] == ["memory"] and capabilities["search_modes"] == ["auto", "fts"]


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


def test_stale_revisions_are_409_revision_conflict(client, server):
    first = remember(client, "cas", "Version one of the plan.")
    error = error_of(client, "/v1/memory/remember",
                     {"scope_id": "cas", "kind": "fact", "text": "x", "expected_revision": 5}, 409)
    assert error["code"] == "revision_conflict"
    assert error["details"] == {"expected_revision": 5, "head_revision": 1}
    cited = citation_of(server, "cas", first["records"][0])
    remember(client, "cas", "Another entry moves the head.")
    # The compare-and-swap is on the entry (as MCP's): another entry's write does not make the citation stale.
    revised = post(client, "/v1/memory/entries/revise",
                   {"scope_id": "cas", "citation": cited, "kind": "fact", "text": "Version two."})
    assert revised["records"][0]["artifact"]["revision"] == 2
    # The entry itself changed since the citation: 409, with what was expected and what holds, by their names.
    error = error_of(client, "/v1/memory/entries/revise",
                     {"scope_id": "cas", "citation": cited, "kind": "fact", "text": "Version three."}, 409)
    assert error["code"] == "revision_conflict"
    assert error["details"] == {"expected_version": 1, "current_version": 2}
    assert error_of(client, "/v1/memory/entries/retire", {"scope_id": "cas", "citation": cited}, 409)["code"] == \
        "revision_conflict"


def test_a_record_from_search_or_list_is_its_own_citation(client):
    """1.4.1 records carry no citation field (additionalProperties: false), but a record's ``artifact`` names the entry
    and its version: revise, retire and get take it as the citation, so a client acts on a hit as it is."""
    remember(client, "records", "The build runs at midnight.")
    hit = post(client, "/v1/memory/search", {"scope_id": "records", "query": "build midnight"})["hits"][0]
    artifact = hit["memory"]["artifact"]
    got = post(client, "/v1/memory/entries/get", {"scope_id": "records", "citation": artifact})
    assert got == hit["memory"]
    revised = post(client, "/v1/memory/entries/revise", {"scope_id": "records", "citation": artifact,
                                                         "kind": "fact", "text": "The build runs at one."})
    new = revised["records"][0]["artifact"]
    assert new["revision"] == 2
    old = post(client, "/v1/memory/entries/get", {"scope_id": "records", "citation": artifact})
    assert old["text"] == "The build runs at midnight.", "an older version is read as it was"
    stale = error_of(client, "/v1/memory/entries/retire", {"scope_id": "records", "citation": artifact}, 409)
    assert stale["details"] == {"expected_version": 1, "current_version": 2}
    listed = post(client, "/v1/memory/entries/list", {"scope_id": "records"})["entries"][0]
    retired = post(client, "/v1/memory/entries/retire", {"scope_id": "records", "citation": listed["artifact"]})
    assert retired["records"][0]["state"] == "retired"
    other = {**artifact, "family": "skill"}
    assert error_of(client, "/v1/memory/entries/get", {"scope_id": "records", "citation": other}, 404)["code"] == \
        "artifact_not_found"


def test_revising_a_retired_entry_is_409_memory_entry_inactive(client, server):
    written = remember(client, "inactive", "Soon retired.")
    citation = citation_of(server, "inactive", written["records"][0])
    retired = post(client, "/v1/memory/entries/retire", {"scope_id": "inactive", "citation": citation})
    head_citation = citation_of(server, "inactive", retired["records"][0])
    error = error_of(client, "/v1/memory/entries/revise",
                     {"scope_id": "inactive", "citation": head_citation, "kind": "fact", "text": "Back."}, 409)
    assert error["code"] == "memory_entry_inactive"


def test_unknown_scopes_entries_and_routes_are_404(client, server):
    written = remember(client, "known", "An entry to cite.")
    citation = citation_of(server, "known", written["records"][0])
    for scope, changed, code in [
            ("unknown-scope", {}, "memory_not_found"),
            ("known", {"entry_id": "ent_missing"}, "memory_not_found"),
            ("known", {"entry_version_id": "ver_missing"}, "memory_not_found"),
            ("known", {"memory_ref": {**citation["memory_ref"], "revision": 99}}, "memory_not_found"),
            ("known", {"memory_ref": {**citation["memory_ref"], "family": "skill"}}, "artifact_not_found"),
            ("known", {"memory_ref": {**citation["memory_ref"], "artifact_id": "mem_other"}}, "artifact_not_found")]:
        body = {"scope_id": scope, "citation": {**citation, **changed}}
        assert error_of(client, "/v1/memory/entries/get", body, 404)["code"] == code, changed
        revise = {**body, "kind": "fact", "text": "new"}
        assert error_of(client, "/v1/memory/entries/revise", revise, 404)["code"] == code
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
    citation = citation_of(server, "erase", written["records"][0])
    server.runtime.memory.for_scope("erase").forget(citation["entry_id"])
    changes = post(client, "/v1/memory/changes", {"scope_id": "erase"})
    last = changes["revisions"][-1]["changes"]
    assert [(c["op"], c["entry_id"], c["to_entry_version_id"]) for c in last] == [
        ("deactivate", citation["entry_id"], None)]
    listed = post(client, "/v1/memory/entries/list", {"scope_id": "erase", "include_inactive": True})
    assert all("secret" not in e["text"] for e in listed["entries"])
    assert error_of(client, "/v1/memory/entries/get", {"scope_id": "erase", "citation": citation}, 404)


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


@pytest.mark.parametrize("body", [
    b'{"scope_id": "latin", "kind": "fact", "text": "caf\xe9 au lait"}',  # Latin-1, not UTF-8
    b'{"scope_id": "latin", "kind": "fact", "text": "cut \xe2\x82"}',  # a truncated UTF-8 sequence
])
def test_a_body_that_is_not_utf8_is_422_as_documented(client, body):
    response = client.post("/v1/memory/remember", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.headers[REQUEST_ID]
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith("The request body is not UTF-8: byte")
    assert error["details"]["errors"][0]["type"] == "json_invalid"
    documented = client.get("/openapi.json").json()["paths"]["/v1/memory/remember"]["post"]["responses"]
    assert "422" in documented and "400" not in documented
    assert post(client, "/v1/memory/entries/list", {"scope_id": "latin"})["entries"] == [], "nothing was written"


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
    entry_id = written["records"][0]["artifact"]["artifact_id"]
    post(client, "/v1/memory/entries/revise", {"scope_id": "extras",
                                                "citation": citation_of(server, "extras", written["records"][0]),
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


def test_the_store_default_fusion_is_served_and_a_traced_search_may_choose_its_own(client, server, monkeypatch):
    """Issue 31: GET /x/pcmem/fusion says how searches that do not choose fuse, and why; the traced page names it."""
    monkeypatch.delenv("PCMEM_SEARCH_FUSION", raising=False)
    remember(client, "fused", "The release train leaves at noon.")
    assert client.get("/x/pcmem/fusion").json() == {"fusion": "rrf", "source": "contract", "store_default": None}
    server.runtime.memory.set_search_fusion("convex")  # as `pcmem fusion set convex` does from another process
    try:
        assert client.get("/x/pcmem/fusion").json() == {"fusion": "convex", "source": "store",
                                                        "store_default": "convex"}
        stored = post(client, "/x/pcmem/search", {"scope_id": "fused", "query": "release train", "rerank": False})
        assert (stored["fusion"], stored["fusion_source"]) == ("convex", "store")
        asked = post(client, "/x/pcmem/search", {"scope_id": "fused", "query": "release train", "rerank": False,
                                                 "fusion": "rrf"})
        assert (asked["fusion"], asked["fusion_source"]) == ("rrf", "request")
        post(client, "/x/pcmem/search", {"scope_id": "fused", "query": "x", "fusion": "borda"}, status=422)
    finally:
        server.runtime.memory.set_search_fusion(None)


# --- OpenAPI ----------------------------------------------------------------------------------------------------

#: PowerContext's openapi/powercontext.yaml (oceanbase/powercontext): path → (operationId, request, 200 response).
POWERCONTEXT_1_4_1 = json.loads((Path(__file__).parents[1] / "data" / "powercontext-1.4.1-memory.json").read_text())


def _ref(schema: dict) -> str:
    return schema["$ref"].rsplit("/", 1)[-1]


def test_openapi_v1_paths_operations_and_schemas_match_powercontext_1_4_1(client):
    """Every memory route of PowerContext 1.4.1 is served under its operation id, with schemas of the same names,
    properties and required fields (tests/serve/test_powercontext_conformance.py checks the behaviour)."""
    spec = client.get("/openapi.json").json()
    theirs_schemas = POWERCONTEXT_1_4_1["components"]["schemas"]
    compared = set()
    for path, item in POWERCONTEXT_1_4_1["paths"].items():
        for method, theirs in item.items():
            ours = spec["paths"][path][method]
            assert ours["operationId"] == theirs["operationId"], path
            if "requestBody" in theirs:
                name = _ref(theirs["requestBody"]["content"]["application/json"]["schema"])
                assert _ref(ours["requestBody"]["content"]["application/json"]["schema"]) == name, path
                compared.add(name)
    for name in sorted(compared):
        ours, theirs = spec["components"]["schemas"][name], theirs_schemas[name]
        assert set(ours["properties"]) == set(theirs["properties"]), name
        assert set(ours.get("required", ())) == set(theirs.get("required", ())), name
        assert ours["additionalProperties"] is False, name
    for name in ("AtomicMemoryRecord", "MemoryMutationResponse", "ListMemoryEntriesResponse",
                 "SearchMemoryResponse", "AtomicMemorySearchHit", "TagFilter", "ArtifactTagSet",
                 "FlushMemoryResponse", "ReadinessResponse", "Capabilities", "PreparedContext", "BootstrapContext",
                 "ServerInfo"):
        ours, theirs = spec["components"]["schemas"][name], theirs_schemas[name]
        assert set(ours["properties"]) <= set(theirs["properties"]), name
        assert set(theirs.get("required", ())) <= set(ours["properties"]), name
    assert spec["components"]["schemas"]["MemorySearchMode"]["enum"] == ["auto", "fts", "vector", "hybrid"]
    assert spec["components"]["schemas"]["AtomicMemoryState"]["enum"] == theirs_schemas["AtomicMemoryState"]["enum"]


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
            error = response.json()["error"]
            if path == "/mcp":  # a JSON-RPC error, whose message an MCP client shows
                assert error["data"]["code"] == "unauthorized" and "--token-file" in error["message"]
            else:
                assert error["code"] == "unauthorized" and "--token-file" in error["message"]
            assert response.headers["www-authenticate"] == "Bearer" and response.headers[REQUEST_ID]
        assert client.get("/.well-known/oauth-protected-resource").status_code == 404, "no OAuth flow to start"
        assert client.get("/health/live").status_code == 200, "liveness stays public, as in PowerContext"


def test_openapi_documents_the_bearer_scheme_and_the_request_id_header(token_server, client):
    """What the middleware does, which FastAPI cannot see: the token (only when the server requires one) and the
    request-id header on every answer, under PowerContext 1.4.1's names."""
    with httpx.Client(base_url=token_server.url, headers={"authorization": f"Bearer {TOKEN}"}) as authorized:
        guarded = authorized.get("/openapi.json").json()
        refused = authorized.post("/v1/memory/search", headers={"authorization": ""},
                                  json={"scope_id": "s", "query": "q"})
    open_ = client.get("/openapi.json").json()
    [(name, scheme)] = guarded["components"]["securitySchemes"].items()
    assert (name, scheme["type"], scheme["scheme"]) == ("BearerAuth", "http", "bearer")
    assert guarded["security"] == [{"BearerAuth": []}]
    assert guarded["paths"]["/health/live"]["get"]["security"] == [], "liveness stays public"
    unauthorized = guarded["paths"]["/v1/memory/search"]["post"]["responses"]["401"]["headers"]
    assert unauthorized["WWW-Authenticate"] == {"$ref": "#/components/headers/BearerChallenge"}
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert "securitySchemes" not in open_["components"] and "security" not in open_, "no token, no scheme"
    assert open_["components"]["headers"]["RequestId"]["schema"] == {"type": "string"}
    for spec in (guarded, open_):
        for path, item in spec["paths"].items():
            for method, operation in item.items():
                for status, response in operation["responses"].items():
                    assert response["headers"]["X-PowerContext-Request-ID"] == {
                        "$ref": "#/components/headers/RequestId"}, (path, method, status)
    assert REQUEST_ID in refused.headers


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

    pcmem.open(tmp_path / "m.duckdb", embedder=None).close()
    done = subprocess.run([sys.executable, "-c", WITHOUT_SERVE_EXTRA, "--db", str(tmp_path / "m.duckdb"), *command],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == pcmem.ConfigurationError.exit_code, done.stderr
    assert done.stderr.strip().splitlines() == [
        "pcmem: error: `pcmem serve` and `pcmem mcp` need fastapi, uvicorn, mcp: pip install 'pcmem[serve]'"]


#: Where each checked field's schema lives in /openapi.json, and the library check the server applies to it.
_CONTROL_CHECKED = {
    ("SearchMemoryRequest", "scope_id"): validation.validate_scope,
    ("SearchMemoryRequest", "query"): validation.normalize_text,
    ("RememberMemoryRequest", "text"): validation.normalize_text,
    ("RememberMemoryRequest", "kind"): validation.validate_kind,
    ("RememberMemoryRequest", "reason"): validation.validate_reason,
}


def test_openapi_says_which_control_characters_text_fields_refuse(client):
    """A value is schema-valid exactly when the server's validation takes it, for every C0/C1 control character
    (and a few neighbours), so a client generated from /openapi.json never sends what is answered 422."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for (model, field), check in _CONTROL_CHECKED.items():
        validator = jsonschema.Draft202012Validator(schemas[model]["properties"][field])
        for code in [*range(0xA1), 0x2028, 0xFEFF]:
            value = f"a{chr(code)}b"
            try:
                check(value)
                accepted = True
            except InputError:
                accepted = False
            assert validator.is_valid(value) is accepted, (model, field, hex(code))


def test_a_refused_control_character_is_schema_invalid_and_answers_422(client):
    schema = client.get("/openapi.json").json()["components"]["schemas"]["RememberMemoryRequest"]
    validator = jsonschema.Draft202012Validator(schema)
    bell = {"scope_id": "controls", "kind": "fact", "text": "ring the bell \x07 now"}
    assert not validator.is_valid(bell)
    refused = post(client, "/v1/memory/remember", bell, status=422)
    assert refused["error"]["code"] == "invalid_request" and "U+0007" in refused["error"]["message"]
    tabbed = {"scope_id": "controls", "kind": "fact", "text": "column one\tcolumn two\nline two"}
    assert validator.is_valid(tabbed)
    assert post(client, "/v1/memory/remember", tabbed)["changed"] is True
