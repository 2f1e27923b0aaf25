"""pcmem serve against PowerContext 1.4.1's OpenAPI document, restricted to the memory family (issue 29).

``tests/data/powercontext-1.4.1-memory.json`` is the wheel's document (``powercontext/http/_generated/schema.py``
of ``powercontext==1.4.1`` on PyPI, Apache-2.0: ``tests/data/powercontext-1.4.1-LICENSE.txt``) cut down to the
routes pcmem serves — the memory routes, ``/v1/context/prepare`` and ``/v1/context/bootstrap``, ``/health/*``,
``/v1/capabilities`` and ``/v1/server-info`` — with the components they use. For every route,
hypothesis generates request bodies from PowerContext's request schema (:func:`from_schema`, half of them aimed at
a scope that has entries; hypothesis-jsonschema does not run on this hypothesis) and the test checks what a
PowerContext client relies on: the status is one the document lists for the operation, and a 200 body validates
against the document's response schema.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
jsonschema = pytest.importorskip("jsonschema")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pcmem  # noqa: E402
from pcmem.serve.app import ServeOptions, create_app  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402

DOCUMENT = json.loads((Path(__file__).parents[1] / "data" / "powercontext-1.4.1-memory.json").read_text())
KNOWN_SCOPE = "project"
POST_ROUTES = sorted(path for path, item in DOCUMENT["paths"].items() if "post" in item)


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0 → JSON Schema: ``nullable: true`` becomes ``anyOf [..., null]``."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


COMPONENTS = _json_schema(copy.deepcopy(DOCUMENT["components"]))


def _schema(ref_holder: dict[str, Any]) -> dict[str, Any]:
    return {**_json_schema(ref_holder), "components": COMPONENTS}


def _operation(path: str, method: str = "post") -> dict[str, Any]:
    return DOCUMENT["paths"][path][method]


def _statuses(operation: dict[str, Any]) -> set[int]:
    return {int(status) for status in operation["responses"]}


def _response_schema(operation: dict[str, Any]) -> dict[str, Any]:
    return _schema(operation["responses"]["200"]["content"]["application/json"]["schema"])


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    path = tmp_path_factory.mktemp("conformance") / "pc.duckdb"
    runtime = pcmem.open(path, embedder=None)
    scope = runtime.memory.for_scope(KNOWN_SCOPE)
    scope.remember(pcmem.RememberRequest(entries=tuple(
        pcmem.NewEntry(text=f"note {i} about the deploy checklist", kind="note", metadata={"tags": ["Ops"]})
        for i in range(12))))
    api = MemoryApi(runtime, path)
    try:
        with TestClient(create_app(api, ServeOptions(mcp=False)), base_url="http://127.0.0.1") as test_client:
            yield test_client
    finally:
        api.close()
        runtime.close()


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under a (JSON Schema form of an OpenAPI 3.0) schema: the keywords PowerContext's memory
    requests use (``$ref``, ``anyOf``/``oneOf``, objects, arrays, strings with bounds and patterns, numbers,
    enums), plus the free-form objects the legacy ``citation`` fields are."""
    if "$ref" in schema:
        _, _, section, name = schema["$ref"].split("/")
        return st.deferred(lambda: from_schema(COMPONENTS[section][name] | {
            k: v for k, v in schema.items() if k != "$ref"}))
    if "allOf" in schema:  # 1.4.1 wraps a $ref with a default this way: {"allOf": [{"$ref"}], "default": ...}
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = {**merged, **part}
        return from_schema(merged)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k != key}
            return st.one_of([from_schema({**rest, **option}) for option in schema[key]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type", "object" if "properties" in schema else None)
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(int(schema.get("minimum", -(2**31))), int(schema.get("maximum", 2**31)))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "string":
        low, high = schema.get("minLength", 0), min(schema.get("maxLength", 40), 300)
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda t: low <= len(t) <= high)
        return st.text(min_size=low, max_size=high)
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {})), min_size=schema.get("minItems", 0),
                        max_size=min(schema.get("maxItems", 5), 5))
    properties = schema.get("properties", {})
    if not properties:
        return st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3)
    required = set(schema.get("required", ())) & set(properties)
    return st.fixed_dictionaries({name: from_schema(properties[name]) for name in required},
                                 optional={name: from_schema(sub) for name, sub in properties.items()
                                           if name not in required})


def _bodies(path: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = _json_schema(_operation(path)["requestBody"]["content"]["application/json"]["schema"])
    generated = from_schema(schema)
    aimed = generated.map(lambda body: {**body, "scope_id": KNOWN_SCOPE} if isinstance(body, dict) else body)
    return st.one_of(generated, aimed)


def test_the_document_is_powercontext_1_4_1_memory_family():
    assert DOCUMENT["info"]["version"] == "1.4.1"
    assert {op["operationId"] for item in DOCUMENT["paths"].values() for op in item.values()} == {
        "flush_memory", "remember_memory", "search_memory", "get_memory_capacity", "list_memory_entries",
        "get_memory_entry", "revise_memory_entry", "retire_memory_entry", "list_memory_changes",
        "get_memory_entry_tags", "replace_memory_entry_tags", "get_readiness", "get_liveness", "get_capabilities",
        "prepare_context", "prepare_bootstrap_context", "get_server_info"}


@pytest.mark.parametrize("path", POST_ROUTES)
def test_generated_requests_get_documented_answers(client, path):
    operation = _operation(path)
    statuses = _statuses(operation)
    response_schema = _response_schema(operation)

    @settings(max_examples=25, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(body=_bodies(path))
    def check(body: dict[str, Any]) -> None:
        response = client.post(path, json=body)
        assert response.status_code in statuses, (path, body, response.status_code, response.text[:500])
        if response.status_code == 200:
            jsonschema.validate(response.json(), response_schema)
        else:
            jsonschema.validate(response.json(), _schema({"$ref": "#/components/schemas/ErrorResponse"}))

    check()


def test_health_capabilities_and_entry_tags_match_the_document(client):
    for path in ("/health/live", "/health/ready", "/v1/capabilities", "/v1/server-info"):
        response = client.get(path)
        assert response.status_code == 200
        jsonschema.validate(response.json(), _response_schema(_operation(path, "get")))
    listed = client.post("/v1/memory/entries/list", json={"scope_id": KNOWN_SCOPE, "limit": 1}).json()
    artifact_id = listed["entries"][0]["artifact"]["artifact_id"]
    tags_path = f"/v1/scopes/{KNOWN_SCOPE}/artifacts/memory/{artifact_id}/entries/{artifact_id}/tags"
    route = "/v1/scopes/{scope_id}/artifacts/memory/{artifact_id}/entries/{entry_id}/tags"
    read = client.get(tags_path)
    assert read.status_code == 200 and read.json()["tags"] == ["Ops"]
    jsonschema.validate(read.json(), _response_schema(_operation(route, "get")))
    assert client.get(tags_path, headers={"If-None-Match": read.headers["ETag"]}).status_code == 304
    stale = client.put(tags_path, json={"tags": ["x"]}, headers={"If-Match": '"sha256:' + "0" * 64 + '"'})
    assert stale.status_code == 412
    written = client.put(tags_path, json={"tags": ["Ops", "Release"]}, headers={"If-Match": read.headers["ETag"]})
    assert written.status_code == 200 and written.json()["tags"] == ["Ops", "Release"]
    jsonschema.validate(written.json(), _response_schema(_operation(route, "put")))
    found = client.post("/v1/memory/entries/list", json={
        "scope_id": KNOWN_SCOPE, "tag_filter": {"tags": ["release"], "match": "all"}}).json()
    assert [e["artifact"]["artifact_id"] for e in found["entries"]] == [artifact_id]


def test_prepared_context_and_bootstrap_answer_in_1_4_1_shape(client):
    """The context routes on a scope with entries: ready packages within max_bytes, validated by the document, with
    1.4.1's invariants (content_bytes is the content's size, package_digest its sha256, items at most 7)."""
    import hashlib

    prepare = _response_schema(_operation("/v1/context/prepare"))
    for max_bytes in (512, 1000, 8000):
        body = {"scope_id": KNOWN_SCOPE, "query": "deploy checklist", "max_bytes": max_bytes}
        prepared = client.post("/v1/context/prepare", json=body).json()
        jsonschema.validate(prepared, prepare)
        assert prepared["status"] == "ready" and set(prepared) == {"schema", "status", "content", "content_bytes"}
        assert prepared["content_bytes"] == len(prepared["content"].encode()) <= max_bytes
    empty = client.post("/v1/context/prepare", json={"scope_id": "nobody", "query": "anything"}).json()
    assert (empty["status"], empty["content"], empty["content_bytes"]) == ("empty", None, 0)
    jsonschema.validate(empty, prepare)

    bootstrap = _response_schema(_operation("/v1/context/bootstrap"))
    start = {"scope_id": KNOWN_SCOPE, "lifecycle": "startup", "integration": "pcmem-tests", "enabled": True}
    ready = client.post("/v1/context/bootstrap", json=start).json()
    jsonschema.validate(ready, bootstrap)
    assert ready["status"] == "ready" and ready["receipt"]["state"] == "pending" and 1 <= len(ready["items"]) <= 7
    assert ready["package_digest"] == "sha256:" + hashlib.sha256(ready["content"].encode()).hexdigest()
    assert ready["content_bytes"] == len(ready["content"].encode()) <= 4096
    assert all(item["kind"] == "atomic-memory" and item["scope_id"] == KNOWN_SCOPE for item in ready["items"])
    skipped = client.post("/v1/context/bootstrap", json={**start, "enabled": False}).json()
    jsonschema.validate(skipped, bootstrap)
    assert (skipped["status"], skipped["reason"], skipped["receipt"]["state"]) == ("skipped", "disabled", "skipped")
    nothing = client.post("/v1/context/bootstrap", json={**start, "scope_id": "nobody"}).json()
    jsonschema.validate(nothing, bootstrap)
    assert (nothing["status"], nothing["reason"]) == ("empty", "no_eligible_context")
    handoff = {"family": "handoff", "artifact_id": "h1", "revision": 1}
    assert client.post("/v1/context/bootstrap", json={**start, "handoff": handoff}).status_code == 404

    info = client.get("/v1/server-info").json()
    assert info["product"] == "powercontext" and info["api_contract_version"] == {"major": 1, "minor": 4}
    assert client.get("/v1/server-info").json()["server_id"] == info["server_id"], "stable"
    assert "powercontext.prepared-context.v1" in client.get("/v1/capabilities").json()["context_versions"]
