"""A reranked search through `pcmem serve --model llama-cpp:smollm2-135m-instruct`, started as users start it.

SmolLM2-135M is a plumbing model: this checks the composition and the transport (v1 returns the reranked hits
without a trace, /x/pcmem/search adds the trace), not ranking quality.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("fastapi")

pytestmark = pytest.mark.slow

MODEL = "llama-cpp:smollm2-135m-instruct"
POLICY_ID = "powercontext.memory.rerank.listwise.v1"
ENTRIES = [
    "The team deploys the desktop app every Thursday afternoon.",
    "The deploy freeze starts on December 20 and ends on January 5.",
    "The release checklist requires two approvals before every deploy.",
    "Marco drinks oolong tea and never coffee.",
    "Priya adopted a beagle puppy named Biscuit in March.",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):  # noqa: ANN001, ANN201
    db = tmp_path_factory.mktemp("served") / "memory.duckdb"
    # A generous timeout: one SmolLM2 request can take well over 10 s on a loaded 2-core machine.
    env = {**os.environ, "POWERCONTEXT_SERVER_INFERENCE_GENERATION_TIMEOUT_SECONDS": "120"}
    log = db.with_name("serve.log")
    with log.open("w") as stderr:  # a file, not a pipe nobody drains
        process = subprocess.Popen(
            [sys.executable, "-m", "pcmem", "--db", str(db), "serve", "--port", "0", "--json", "--model", MODEL],
            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env,
        )
    try:
        line = process.stdout.readline()
        assert line, log.read_text()
        yield json.loads(line)["url"]
    finally:
        process.terminate()
        process.wait(30)


def test_reranked_search_through_the_server(served):
    with httpx.Client(base_url=served, timeout=300) as client:
        for text in ENTRIES:
            assert client.post("/v1/memory/remember", json={"scope_id": "team", "kind": "fact", "text": text}
                               ).status_code == 200
        health = client.get("/x/pcmem/health").json()
        assert health["rerank_policy"] == POLICY_ID and health["generation_model"] == MODEL
        assert MODEL in health["models_loaded"]

        body = {"scope_id": "team", "query": "when is the deploy freeze?", "limit": 2}
        v1 = client.post("/v1/memory/search", json=body)
        assert v1.status_code == 200, v1.text
        assert set(v1.json()) == {"mode", "hits"}  # PowerContext 1.4.1's search response
        assert 1 <= len(v1.json()["hits"]) <= 2

        traced = client.post("/x/pcmem/search", json=body).json()
        trace = traced["rerank"]
        assert trace["policy_id"] == POLICY_ID and trace["usage"]["requests"] >= 1
        pool = trace["candidates"]
        assert all(1 <= rank <= len(pool) for rank in trace["selected_ranks"])
        assert [hit["citation"] for hit in traced["hits"]] == [
            pool[rank - 1]["citation"] for rank in trace["selected_ranks"]]
        # Temperature 0: the v1 search selected the same entries the traced one did.
        assert [hit["memory"]["text"] for hit in v1.json()["hits"]] == [hit["text"] for hit in traced["hits"]]
