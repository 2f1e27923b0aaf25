"""The HTTP writes take an Idempotency-Key header (#38): the same write sent again with the same key is answered with
its first outcome, not applied again. In-process (httpx's ASGI transport): the routes are what is tested here."""

from __future__ import annotations

import httpx
import pytest

import pcmem
from pcmem.serve.app import ServeOptions, create_app
from pcmem.serve.operations import MemoryApi


def citation_of(client, record: dict) -> dict:  # noqa: ANN001
    """The v1 citation of a record at the head (records name the entry, not a citation: read it from the store)."""
    cited = client.runtime.memory.for_scope("p").get_entry(record["artifact"]["artifact_id"]).citation
    return {"memory_ref": {"family": "memory", "artifact_id": cited.artifact_id, "revision": cited.revision},
            "entry_id": cited.entry_id, "entry_version_id": cited.entry_version_id}


@pytest.fixture
async def client(tmp_path):
    path = tmp_path / "memory.duckdb"
    runtime = pcmem.open(path, embedder=None)
    api = MemoryApi(runtime, path)
    transport = httpx.ASGITransport(app=create_app(api, ServeOptions(mcp=False)))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        http.runtime = runtime  # type: ignore[attr-defined]
        yield http
    api.close()
    runtime.close()


async def test_a_remember_sent_again_with_its_key_is_answered_not_applied_again(client):
    body = {"scope_id": "p", "kind": "fact", "text": "We deploy on Fridays.", "reason": None}
    first = await client.post("/v1/memory/remember", json=body, headers={"Idempotency-Key": "a1b2"})
    assert first.status_code == 200, first.text
    other = await client.post("/v1/memory/remember", json={**body, "text": "Lunch is at noon."})
    again = await client.post("/v1/memory/remember", json=body, headers={"Idempotency-Key": "a1b2"})
    assert again.status_code == 200 and again.json() == first.json()
    assert other.json()["records"][0]["state_version"] == 2
    assert client.runtime.memory.for_scope("p").head().revision == 2  # type: ignore[attr-defined]
    unkeyed = await client.post("/v1/memory/remember", json=body)  # no key: a new write each time
    assert unkeyed.json()["records"][0]["state_version"] == 3


async def test_a_revise_and_a_retire_sent_again_with_their_keys_are_answered(client):
    written = await client.post("/v1/memory/remember", json={"scope_id": "p", "kind": "fact", "text": "Lisbon",
                                                              "reason": None})
    citation = citation_of(client, written.json()["records"][0])
    revise = {"scope_id": "p", "citation": citation, "text": "Braga", "kind": "fact", "reason": None}
    first = await client.post("/v1/memory/entries/revise", json=revise, headers={"Idempotency-Key": "r1"})
    assert first.status_code == 200, first.text
    again = await client.post("/v1/memory/entries/revise", json=revise, headers={"Idempotency-Key": "r1"})
    assert again.json() == first.json()  # without the key: revision_conflict (the cited revision is not the head)
    retire = {"scope_id": "p", "citation": citation_of(client, first.json()["records"][0]), "reason": None}
    retired = await client.post("/v1/memory/entries/retire", json=retire, headers={"Idempotency-Key": "t1"})
    assert (await client.post("/v1/memory/entries/retire", json=retire,
                              headers={"Idempotency-Key": "t1"})).json() == retired.json()
    assert client.runtime.memory.for_scope("p").head().revision == 3  # type: ignore[attr-defined]


async def test_a_bad_idempotency_key_is_refused_and_writes_nothing(client):
    body = {"scope_id": "p", "kind": "fact", "text": "x", "reason": None}
    for key in ("has space", "x" * 129):
        refused = await client.post("/v1/memory/remember", json=body, headers={"Idempotency-Key": key})
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_request", refused.text
    reused = await client.post("/v1/memory/remember", json=body, headers={"Idempotency-Key": "k"})
    assert reused.status_code == 200
    other = await client.post("/v1/memory/remember", json={**body, "scope_id": "q"}, headers={"Idempotency-Key": "k"})
    assert other.status_code == 422 and "was used for another write" in other.json()["error"]["message"]
    assert [s.scope for s in client.runtime.memory.scopes()] == ["p"]  # type: ignore[attr-defined]
