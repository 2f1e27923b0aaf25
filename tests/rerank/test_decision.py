"""The decision-model seam (SPEC §4, RFC 1745) with scripted decision models.

The fakes stand in for the *model* only: ``DecisionReranker``, the fail-open envelope, role resolution
(``for_role``), ``SearchService`` and the write gate are the real code, on real DuckDB stores where a store is
involved. Real-model tests live in ``test_decision_llama.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.decision.envelope import ROLE_POLICIES, FailOpenDecisionModel, for_role
from pcmem.errors import InferenceTimeoutError, InferenceUnavailableError, RerankError
from pcmem.memory.write_gate import QUESTION as GATE_QUESTION
from pcmem.memory.write_gate import ROLE as GATE_ROLE
from pcmem.memory.write_gate import WriteGate
from pcmem.rerank.decision import FILL_POLICY_ID, POLICY_ID, QUESTION, DecisionReranker
from pcmem.settings import (
    ENV_GENERATION_MAX_REQUESTS,
    ENV_GENERATION_MODEL,
    ENV_GENERATION_TIMEOUT,
    ENV_RERANK_CANDIDATE_LIMIT,
    ENV_RERANK_ENABLED,
)
from pcmem.types.decision import DecisionFailurePolicy, DecisionOutcome, DecisionRequest, DecisionResult
from pcmem.types.memory import Citation
from pcmem.types.search import MemoryHit, SearchMemoryRequest, SearchPage
from pcmem.types.usage import Usage

YES, NO, ABSTAIN = DecisionOutcome.YES, DecisionOutcome.NO, DecisionOutcome.ABSTAIN


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    """No POWERCONTEXT_* variable of the developer's shell may leak into these tests."""
    for name in (ENV_RERANK_ENABLED, ENV_RERANK_CANDIDATE_LIMIT, ENV_GENERATION_MODEL, ENV_GENERATION_TIMEOUT,
                 ENV_GENERATION_MAX_REQUESTS):
        monkeypatch.delenv(name, raising=False)


# --- fakes -----------------------------------------------------------------------------------------------------

ScriptItem = str | DecisionOutcome | DecisionResult | BaseException


class ScriptedDecisionModel:
    """A DecisionModel that answers from a script (one item per call, in order) or from a rule over the request.

    An item is an outcome ("yes"/"no"/"abstain"), a ready DecisionResult (returned as is), or an exception (raised:
    a backend failure). Every request is recorded. Usage per call: 1 request, len(subject) input tokens, 1 output.
    """

    policy_id = "test.scripted.decision.v1"

    def __init__(self, *script: ScriptItem, rule: Callable[[DecisionRequest], ScriptItem] | None = None) -> None:
        self.script = list(script)
        self.rule = rule
        self.requests: list[DecisionRequest] = []

    @property
    def calls(self) -> int:
        return len(self.requests)

    def evaluate(self, request: DecisionRequest) -> DecisionResult:
        self.requests.append(request)
        if self.rule is not None:
            item = self.rule(request)
        else:
            assert self.script, "the decision model was called more often than scripted"
            item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, DecisionResult):
            return item
        return DecisionResult(outcome=DecisionOutcome(item), policy_id=self.policy_id,
                              usage=Usage(requests=1, input_tokens=len(request.subject), output_tokens=1))


def make_hit(index: int, text: str | None = None) -> MemoryHit:
    citation = Citation(artifact_id="art", revision=1, entry_id=f"e{index}", entry_version_id=f"v{index}")
    return MemoryHit(citation=citation, text=text or f"candidate number {index} " + "x" * index, kind="fact",
                     score=1 / (60 + index), matched_by=("fts",))


def hits(n: int) -> tuple[MemoryHit, ...]:
    return tuple(make_hit(i) for i in range(1, n + 1))


def rerank(script: str, k: int, *, fill: bool = False, n: int | None = None):
    """Rerank ``n`` (default: one per script letter) candidates; ``script`` letters y/n/a are per-candidate outcomes."""
    outcomes = {"y": "yes", "n": "no", "a": "abstain"}
    model = ScriptedDecisionModel(*(outcomes[c] for c in script))
    decision = DecisionReranker(model, fill_to_limit=fill).rerank("query", hits(len(script) if n is None else n), k)
    return decision, model


# --- DecisionReranker: selection ----------------------------------------------------------------------------------


def test_each_request_asks_about_one_candidate_with_the_query_as_evidence():
    candidates = hits(3)
    model = ScriptedDecisionModel("no", "no", "no")
    DecisionReranker(model).rerank("when do we deploy", candidates, 2)
    assert [r.subject for r in model.requests] == [hit.text for hit in candidates]
    for request in model.requests:
        assert request.decision_kind == "memory.rerank"
        assert request.question == QUESTION
        assert request.evidence == ("when do we deploy",)


def test_stops_as_soon_as_k_are_kept():
    decision, model = rerank("yyyyy", 2)
    assert model.calls == 2  # the 3rd..5th candidates are never evaluated
    assert model.script == ["yes", "yes", "yes"]
    assert decision.decision_calls == 2
    assert decision.selected_ranks == (1, 2)
    assert decision.used_fallback is False


def test_early_stop_counts_only_the_calls_made():
    decision, model = rerank("nynnyyn", 2)
    assert model.calls == 5
    assert decision.decision_calls == 5
    assert decision.selected_ranks == (2, 5)


def test_a_healthy_abstain_is_kept():
    decision, _ = rerank("anan", 2)
    assert decision.selected_ranks == (1, 3)
    assert decision.used_fallback is False
    decision, _ = rerank("aaa", 5)
    assert decision.selected_ranks == (1, 2, 3)


def test_kept_candidates_stay_in_coarse_order():
    decision, model = rerank("nynyyy", 3)
    assert decision.selected_ranks == (2, 4, 5)
    assert model.calls == 5


def test_nothing_kept_falls_back_to_the_first_k_coarse_ranks_after_a_full_scan():
    decision, model = rerank("nnnnn", 3)
    assert decision.selected_ranks == (1, 2, 3)
    assert decision.used_fallback is True
    assert model.calls == decision.decision_calls == 5  # the fallback case counts the whole scan
    decision, _ = rerank("nn", 5)  # k > n: 1..min(k, n)
    assert decision.selected_ranks == (1, 2)
    assert decision.used_fallback is True


def test_k_larger_than_the_pool_is_capped_at_the_pool():
    decision, model = rerank("yyy", 10)
    assert decision.selected_ranks == (1, 2, 3)
    assert model.calls == 3


def test_discarded_rank_count_is_always_zero():
    for script, k, fill in [("yyy", 2, False), ("nnn", 2, False), ("nyn", 3, True), ("ana", 1, False),
                            ("nnnn", 2, True)]:
        decision, _ = rerank(script, k, fill=fill)
        assert decision.discarded_rank_count == 0, (script, k, fill)


def test_usage_is_the_sum_over_every_call():
    candidates = hits(4)
    model = ScriptedDecisionModel(
        DecisionResult(outcome=NO, policy_id="p", usage=Usage(requests=1, input_tokens=10, output_tokens=1)),
        DecisionResult(outcome=NO, policy_id="p", usage=Usage(requests=1, input_tokens=20, output_tokens=2)),
        DecisionResult(outcome=YES, policy_id="p", usage=Usage(requests=2, input_tokens=30, output_tokens=3)),
        DecisionResult(outcome=YES, policy_id="p", usage=Usage(requests=1, input_tokens=40, output_tokens=4)),
    )
    decision = DecisionReranker(model).rerank("q", candidates, 1)
    assert model.calls == 3
    assert decision.usage == Usage(requests=4, input_tokens=60, output_tokens=6)


def test_usage_of_a_fallback_scan_is_the_sum_over_the_whole_scan():
    decision, _ = rerank("nnn", 2)
    assert decision.usage == Usage(requests=3, input_tokens=sum(len(h.text) for h in hits(3)), output_tokens=3)


def test_the_progress_callback_gets_done_and_total_per_candidate():
    seen: list[tuple[int, int]] = []
    model = ScriptedDecisionModel("no", "yes", "no", "yes", "yes", "yes")
    DecisionReranker(model).rerank("q", hits(6), 2, lambda d, t: seen.append((d, t)))
    assert seen == [(1, 6), (2, 6), (3, 6), (4, 6)]  # one per evaluated candidate, stopping with the early stop
    seen.clear()
    DecisionReranker(ScriptedDecisionModel("no", "no", "no")).rerank("q", hits(3), 2, lambda d, t: seen.append((d, t)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


# --- DecisionReranker: fail closed --------------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", [YES, NO, ABSTAIN])
def test_a_result_with_used_fallback_fails_the_rerank_closed(outcome):
    degraded = DecisionResult(outcome=outcome, policy_id="p", used_fallback=True)
    model = ScriptedDecisionModel("yes", degraded, "yes", "yes")
    with pytest.raises(RerankError, match="fails closed"):
        DecisionReranker(model).rerank("q", hits(4), 3)
    assert model.calls == 2  # nothing after the failure is evaluated


def test_a_degraded_result_after_nothing_was_kept_still_raises_rather_than_falling_back():
    model = ScriptedDecisionModel("no", "no", DecisionResult(outcome=ABSTAIN, policy_id="p", used_fallback=True))
    with pytest.raises(RerankError):
        DecisionReranker(model).rerank("q", hits(3), 2)


def test_a_fail_open_wrapped_backend_cannot_pass_a_failure_off_as_a_keep():
    """The misconfiguration RFC 1745 is about: the envelope turns the failure into abstain, the reranker raises."""
    backend = ScriptedDecisionModel(rule=lambda _r: InferenceUnavailableError("provider down"))
    with pytest.raises(RerankError):
        DecisionReranker(FailOpenDecisionModel(backend)).rerank("q", hits(3), 2)


def test_an_unwrapped_backend_error_propagates_as_is():
    model = ScriptedDecisionModel("yes", InferenceTimeoutError("too slow"))
    with pytest.raises(InferenceTimeoutError, match="too slow"):
        DecisionReranker(model).rerank("q", hits(3), 2)


# --- DecisionReranker: fill-to-limit ------------------------------------------------------------------------------


def test_policy_ids():
    model = ScriptedDecisionModel()
    assert DecisionReranker(model).policy_id == POLICY_ID == "powercontext.memory.rerank.decision.v1"
    assert (DecisionReranker(model, fill_to_limit=True).policy_id == FILL_POLICY_ID
            == "powercontext.memory.rerank.decision.fill-to-limit.v1")


def test_fill_to_limit_appends_unselected_coarse_ranks_after_the_kept_ones():
    decision, model = rerank("nnynn", 3, fill=True)
    assert decision.selected_ranks == (3, 1, 2)  # kept first, then the unselected coarse ranks in coarse order
    assert decision.used_fallback is False
    assert model.calls == decision.decision_calls == 5
    decision, _ = rerank("ynnyn", 3, fill=True)
    assert decision.selected_ranks == (1, 4, 2)


def test_fill_to_limit_changes_nothing_when_k_are_kept_or_nothing_is():
    assert rerank("yyyy", 3, fill=True)[0] == rerank("yyyy", 3)[0]
    filled = rerank("nnnn", 3, fill=True)[0]
    assert filled.selected_ranks == (1, 2, 3) and filled.used_fallback is True


def test_fill_to_limit_never_exceeds_the_pool():
    decision, _ = rerank("ny", 5, fill=True)
    assert decision.selected_ranks == (2, 1)


# --- DecisionReranker: a pinned table of scenarios -------------------------------------------------------------

#: name → (per-candidate outcomes y/n/a, k, fill_to_limit)
SCENARIOS: dict[str, tuple[str, int, bool]] = {
    "all-yes-stops-at-k": ("yyyyyy", 3, False),
    "first-candidate-only": ("yyyy", 1, False),
    "late-keeps": ("nnnyy", 2, False),
    "only-the-last-is-kept": ("nnnny", 3, False),
    "abstain-kept": ("anana", 2, False),
    "mixed-yes-abstain": ("nayna", 3, False),
    "nothing-kept-fallback": ("nnnnn", 3, False),
    "nothing-kept-small-pool": ("nn", 5, False),
    "k-exceeds-pool": ("yny", 10, False),
    "single-candidate-no": ("n", 1, False),
    "fill-some-kept": ("nnynn", 3, True),
    "fill-two-kept": ("ynnyn", 3, True),
    "fill-all-kept": ("yyyyy", 3, True),
    "fill-nothing-kept": ("nnnn", 2, True),
    "fill-k-exceeds-pool": ("nyn", 8, True),
}


def _outcome(name: str) -> dict[str, object]:
    script, k, fill = SCENARIOS[name]
    decision, model = rerank(script, k, fill=fill)
    assert decision.decision_calls == model.calls
    return {
        "selected_ranks": decision.selected_ranks,
        "used_fallback": decision.used_fallback,
        "decision_calls": decision.decision_calls,
    }


def test_scenario_table_is_pinned(snapshot):
    assert {name: _outcome(name) for name in SCENARIOS} == snapshot


@pytest.mark.parametrize(
    ("name", "selected", "used_fallback", "calls"),
    [
        ("all-yes-stops-at-k", (1, 2, 3), False, 3),
        ("only-the-last-is-kept", (5,), False, 5),
        ("abstain-kept", (1, 3), False, 3),
        ("nothing-kept-fallback", (1, 2, 3), True, 5),
        ("nothing-kept-small-pool", (1, 2), True, 2),
        ("fill-some-kept", (3, 1, 2), False, 5),
        ("fill-nothing-kept", (1, 2), True, 4),
    ],
)
def test_scenarios_explicitly(name, selected, used_fallback, calls):
    assert _outcome(name) == {"selected_ranks": selected, "used_fallback": used_fallback, "decision_calls": calls}


@given(
    outcomes=st.lists(st.sampled_from(["yes", "no", "abstain"]), min_size=1, max_size=12),
    k=st.integers(min_value=1, max_value=15),
    fill=st.booleans(),
)
def test_selection_invariants(outcomes, k, fill):
    n = len(outcomes)
    model = ScriptedDecisionModel(*outcomes)
    decision = DecisionReranker(model, fill_to_limit=fill).rerank("q", hits(n), k)
    limit = min(k, n)
    keeps = [rank for rank, o in enumerate(outcomes, start=1) if o != "no"]
    expected_kept = keeps[:limit]
    # early stop exactly at the k-th keep, else a full scan
    assert model.calls == decision.decision_calls == (expected_kept[-1] if len(expected_kept) == limit else n)
    ranks = decision.selected_ranks
    assert len(set(ranks)) == len(ranks) and all(1 <= r <= n for r in ranks)
    assert decision.discarded_rank_count == 0
    if not expected_kept:
        assert ranks == tuple(range(1, limit + 1)) and decision.used_fallback is True
        return
    assert decision.used_fallback is False
    assert ranks[: len(expected_kept)] == tuple(expected_kept)
    if fill:
        assert len(ranks) == limit
        rest = [r for r in range(1, n + 1) if r not in expected_kept]
        assert ranks[len(expected_kept):] == tuple(rest[: limit - len(expected_kept)])
    else:
        assert ranks == tuple(expected_kept)


# --- the fail-open envelope and role resolution -----------------------------------------------------------------


def _request(subject: str = "an entry", kind: str = GATE_ROLE) -> DecisionRequest:
    return DecisionRequest(decision_kind=kind, question="q?", subject=subject, evidence=("new note",))


def test_the_envelope_turns_an_exception_into_a_fallback_abstain():
    backend = ScriptedDecisionModel(RuntimeError("boom"))
    result = FailOpenDecisionModel(backend).evaluate(_request())
    assert result.outcome is ABSTAIN
    assert result.used_fallback is True
    assert result.policy_id == backend.policy_id
    assert result.usage == Usage()
    assert "RuntimeError" in (result.rationale or "")


@pytest.mark.parametrize("error", [InferenceTimeoutError("slow"), InferenceUnavailableError("down"), ValueError("x")])
def test_the_envelope_absorbs_every_exception_type(error):
    result = FailOpenDecisionModel(ScriptedDecisionModel(error)).evaluate(_request())
    assert (result.outcome, result.used_fallback) == (ABSTAIN, True)


def test_the_envelope_passes_a_healthy_result_through_unchanged():
    verdict = DecisionResult(outcome=NO, policy_id="inner", usage=Usage(requests=1), confidence=0.7)
    wrapped = FailOpenDecisionModel(ScriptedDecisionModel(verdict))
    assert wrapped.evaluate(_request()) is verdict
    assert wrapped.policy_id == ScriptedDecisionModel.policy_id


@pytest.mark.parametrize("error", [asyncio.CancelledError(), KeyboardInterrupt(), SystemExit(3)])
def test_cancellation_and_interrupts_propagate_through_the_envelope(error):
    with pytest.raises(type(error)):
        FailOpenDecisionModel(ScriptedDecisionModel(error)).evaluate(_request())


def test_the_failure_log_never_contains_the_subject_text(caplog):
    secret = "Priya's passport number is X1234567"
    backend = ScriptedDecisionModel(RuntimeError(f"could not process {secret}"))
    with caplog.at_level(logging.DEBUG):
        FailOpenDecisionModel(backend).evaluate(_request(subject=secret))
    records = [r for r in caplog.records if r.name == "pcmem.decision.envelope"]
    assert records, "the fallback must be logged"
    for record in caplog.records:
        text = record.getMessage() + (caplog.text or "")
        assert secret not in text
        assert "X1234567" not in text
    assert backend.policy_id in records[0].getMessage()
    assert GATE_ROLE in records[0].getMessage()


def test_role_policies():
    assert ROLE_POLICIES["memory.rerank"] is DecisionFailurePolicy.FAIL_CLOSED
    assert ROLE_POLICIES["memory.write-gate"] is DecisionFailurePolicy.FAIL_OPEN


def test_the_rerank_role_gets_the_backend_itself():
    backend = ScriptedDecisionModel()
    assert for_role(backend, "memory.rerank") is backend


def test_the_write_gate_role_gets_the_same_backend_wrapped():
    backend = ScriptedDecisionModel()
    handle = for_role(backend, "memory.write-gate")
    assert isinstance(handle, FailOpenDecisionModel)
    assert handle.inner is backend
    assert WriteGate(backend).decision_model.inner is backend


@pytest.mark.parametrize("role", ["memory.recall-hint", "", "MEMORY.RERANK", "memory.rerank "])
def test_unknown_roles_default_to_fail_open(role):
    backend = ScriptedDecisionModel()
    handle = for_role(backend, role)
    assert isinstance(handle, FailOpenDecisionModel) and handle.inner is backend


def test_one_failing_backend_fails_the_rerank_role_and_opens_the_gate_role():
    backend = ScriptedDecisionModel(rule=lambda _r: InferenceUnavailableError("provider down"))
    rerank_handle = for_role(backend, "memory.rerank")
    gate_handle = for_role(backend, "memory.write-gate")
    with pytest.raises(InferenceUnavailableError):
        DecisionReranker(rerank_handle).rerank("q", hits(3), 2)
    result = gate_handle.evaluate(_request())
    assert (result.outcome, result.used_fallback) == (ABSTAIN, True)
    assert backend.calls == 2


# --- search integration on a real store --------------------------------------------------------------------------

DEPLOY_NOTES = {
    "a-thursday": "deploy checklist: run the smoke tests before the deploy",
    "b-friday": "deploy day is Friday after the 14:00 check",
    "c-rollback": "a failed deploy is rolled back with the previous build",
    "d-friday-late": "no deploy after 17:00 on Friday",
    "e-docs": "the docs site deploy is automatic on merge",
    "f-friday-freeze": "release freeze: the Friday deploy is skipped in December",
    "g-owner": "Marco owns the deploy pipeline",
}
QUERY = "deploy"


def open_store(path: Path, **options):
    return pcmem.open(path, embedder=None, config=RuntimeConfig(),
                           inference=InferenceConfig(), **options)


@pytest.fixture
def seeded(db_path) -> tuple[Path, SearchPage]:
    """A store of deploy notes, and its coarse pool for QUERY (read without a reranker)."""
    with open_store(db_path) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=k, text=t) for k, t in DEPLOY_NOTES.items())))
        memory.remember(RememberRequest(entries=(NewEntry(entry_id="z-other", text="Marco drinks oolong tea"),)))
        coarse = memory.search(SearchMemoryRequest(query=QUERY, limit=30))
    assert len(coarse.hits) == len(DEPLOY_NOTES)
    return db_path, coarse


def friday_rule(request: DecisionRequest) -> str:
    return "yes" if "Friday" in request.subject else "no"


def test_search_with_an_injected_decision_reranker(seeded):
    path, coarse = seeded
    model = ScriptedDecisionModel(rule=friday_rule)
    seen: list[tuple[int, int]] = []
    with open_store(path, reranker=DecisionReranker(model)) as runtime:
        page = runtime.memory.for_scope("ops").search(SearchMemoryRequest(query=QUERY, limit=2),
                                                      progress=lambda d, t: seen.append((d, t)))
    trace = page.rerank
    assert trace is not None
    assert trace.policy_id == POLICY_ID
    assert trace.candidates == coarse.hits  # the exact coarse pool
    assert trace.decision_calls == model.calls
    fridays = [rank for rank, hit in enumerate(coarse.hits, start=1) if "Friday" in hit.text]
    assert trace.selected_ranks == tuple(fridays[:2])
    assert model.calls == fridays[1]  # stopped at the second keep
    assert trace.used_fallback is False and trace.discarded_rank_count == 0
    assert page.hits == tuple(coarse.hits[r - 1] for r in trace.selected_ranks)
    assert all("Friday" in hit.text for hit in page.hits)
    assert {hit.citation.revision for hit in page.hits} == {2}
    assert trace.usage == Usage(requests=model.calls, input_tokens=sum(len(r.subject) for r in model.requests),
                                output_tokens=model.calls)
    assert [r.evidence for r in model.requests] == [(QUERY,)] * model.calls
    assert seen == [(i, len(coarse.hits)) for i in range(1, model.calls + 1)]


def test_search_where_nothing_is_kept_returns_the_flagged_fallback(seeded):
    path, coarse = seeded
    model = ScriptedDecisionModel(rule=lambda _r: "no")
    with open_store(path, reranker=DecisionReranker(model)) as runtime:
        page = runtime.memory.for_scope("ops").search(SearchMemoryRequest(query=QUERY, limit=3))
    assert page.rerank.used_fallback is True
    assert page.rerank.selected_ranks == (1, 2, 3)
    assert page.rerank.decision_calls == model.calls == len(coarse.hits)
    assert page.hits == coarse.hits[:3]


def test_search_with_the_fill_to_limit_policy(seeded):
    path, coarse = seeded
    model = ScriptedDecisionModel(rule=friday_rule)
    with open_store(path, reranker=DecisionReranker(model, fill_to_limit=True)) as runtime:
        page = runtime.memory.for_scope("ops").search(SearchMemoryRequest(query=QUERY, limit=5))
    fridays = [rank for rank, hit in enumerate(coarse.hits, start=1) if "Friday" in hit.text]
    others = [rank for rank in range(1, len(coarse.hits) + 1) if rank not in fridays]
    assert page.rerank.policy_id == FILL_POLICY_ID
    assert page.rerank.selected_ranks == tuple(fridays) + tuple(others[: 5 - len(fridays)])
    assert page.rerank.decision_calls == len(coarse.hits)
    assert page.hits == tuple(coarse.hits[r - 1] for r in page.rerank.selected_ranks)


@pytest.mark.parametrize("error", [InferenceUnavailableError("provider down"), InferenceTimeoutError("too slow")])
def test_search_raises_when_the_rerank_backend_fails(seeded, error):
    path, _ = seeded
    model = ScriptedDecisionModel(rule=lambda r: error if "rolled back" in r.subject else "no")
    with open_store(path, reranker=DecisionReranker(for_role(model, "memory.rerank"))) as runtime:
        with pytest.raises(type(error)):
            runtime.memory.for_scope("ops").search(SearchMemoryRequest(query=QUERY, limit=3))


def test_search_raises_when_the_rerank_backend_is_wrongly_wrapped_fail_open(seeded):
    path, _ = seeded
    model = ScriptedDecisionModel(rule=lambda _r: InferenceUnavailableError("provider down"))
    with open_store(path, reranker=DecisionReranker(FailOpenDecisionModel(model))) as runtime:
        with pytest.raises(RerankError):
            runtime.memory.for_scope("ops").search(SearchMemoryRequest(query=QUERY, limit=3))


async def test_async_search_raises_too(seeded):
    path, _ = seeded
    model = ScriptedDecisionModel(rule=lambda _r: InferenceUnavailableError("provider down"))
    async with pcmem.open_async(path, embedder=None, config=RuntimeConfig(), inference=InferenceConfig(),
                                  reranker=DecisionReranker(model)) as runtime:
        with pytest.raises(InferenceUnavailableError):
            await runtime.memory.for_scope("ops").search(SearchMemoryRequest(query=QUERY, limit=3))


def test_no_decision_is_made_without_coarse_hits(seeded):
    path, _ = seeded
    model = ScriptedDecisionModel()
    with open_store(path, reranker=DecisionReranker(model)) as runtime:
        page = runtime.memory.for_scope("ops").search("kubernetes")
        empty = runtime.memory.for_scope("nobody").search(QUERY)
    assert page.hits == () and page.rerank is None
    assert empty.hits == () and empty.memory is None
    assert model.calls == 0


# --- the write gate on a real store -----------------------------------------------------------------------------

EXISTING = "team deploy schedule: Fridays after the check"


def gated(path: Path, model) -> pcmem.SyncRuntime:
    return open_store(path, write_gate=model)


def dup_rule(request: DecisionRequest) -> str:
    """The scripted gate: a new note containing 'again' is already stated by an existing entry."""
    return "yes" if "again" in request.evidence[0] else "no"


def test_a_duplicate_is_reported_and_nothing_is_written(db_path):
    model = ScriptedDecisionModel(rule=dup_rule)
    with gated(db_path, model) as runtime:
        memory = runtime.memory.for_scope("ops")
        first = memory.remember(EXISTING)
        assert model.calls == 0  # empty scope: the gate is not consulted
        result = memory.remember("team deploy schedule again: Fridays")
        assert result.citations == ()
        assert len(result.duplicates) == 1
        duplicate = result.duplicates[0]
        assert duplicate.index == 0
        assert duplicate.text == "team deploy schedule again: Fridays"
        assert duplicate.existing == first.citations[0]
        assert result.memory == first.memory  # the unchanged head
        assert memory.head().revision == 1
        assert len(memory.revisions()) == 1
        assert [e.entry.text for e in memory.list().entries] == [EXISTING]
    request = model.requests[0]
    assert request.decision_kind == GATE_ROLE
    assert request.question == GATE_QUESTION
    assert request.subject == EXISTING
    assert request.evidence == ("team deploy schedule again: Fridays",)


def test_allow_duplicates_writes_anyway_without_consulting_the_gate(db_path):
    model = ScriptedDecisionModel(rule=dup_rule)
    with gated(db_path, model) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(EXISTING)
        result = memory.remember(RememberRequest(entries=(NewEntry(text="team deploy schedule again"),),
                                                 allow_duplicates=True))
        assert result.duplicates == ()
        assert len(result.citations) == 1
        assert memory.head().revision == 2
    assert model.calls == 0


@pytest.mark.parametrize("failure", [RuntimeError("backend crashed"), InferenceTimeoutError("too slow")])
def test_a_failing_gate_backend_lets_the_write_proceed(db_path, failure):
    model = ScriptedDecisionModel(rule=lambda _r: failure)
    with gated(db_path, model) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(EXISTING)
        result = memory.remember("team deploy schedule again: Fridays")
        assert result.duplicates == ()
        assert len(result.citations) == 1
        assert memory.head().revision == 2
    assert model.calls >= 1  # it was consulted, and failed


def test_the_gate_is_not_consulted_on_an_empty_scope(db_path):
    model = ScriptedDecisionModel(rule=lambda _r: "yes")
    with gated(db_path, model) as runtime:
        result = runtime.memory.for_scope("fresh").remember("team deploy schedule again")
    assert model.calls == 0
    assert len(result.citations) == 1 and result.duplicates == ()


def test_a_mixed_batch_writes_only_the_new_entry_in_one_revision(db_path):
    model = ScriptedDecisionModel(rule=dup_rule)
    with gated(db_path, model) as runtime:
        memory = runtime.memory.for_scope("ops")
        first = memory.remember(EXISTING)
        batch = RememberRequest(entries=(
            NewEntry(entry_id="dup", text="team deploy schedule again: Fridays"),
            NewEntry(entry_id="new", text="team deploy schedule moves to Thursdays in May"),
        ))
        result = memory.remember(batch)
        assert [d.index for d in result.duplicates] == [0]
        assert result.duplicates[0].existing == first.citations[0]
        assert [c.entry_id for c in result.citations] == ["new"]
        assert result.memory.revision == 2
        assert memory.head().revision == 2
        assert sorted(e.entry.entry_id for e in memory.list().entries) == sorted([first.citations[0].entry_id, "new"])
    evidence = {r.evidence[0] for r in model.requests}
    assert evidence == {batch.entries[0].text, batch.entries[1].text}  # both entries were checked


@pytest.mark.parametrize("verdict", [ABSTAIN, NO, DecisionResult(outcome=YES, policy_id="p", used_fallback=True)],
                         ids=["abstain", "no", "degraded-yes"])
def test_only_a_healthy_yes_blocks_a_write(db_path, verdict):
    model = ScriptedDecisionModel(rule=lambda _r: verdict)
    with gated(db_path, model) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(EXISTING)
        result = memory.remember("team deploy schedule again: Fridays")
        assert result.duplicates == () and len(result.citations) == 1
        assert memory.head().revision == 2
    assert model.calls == 1


def test_the_gate_asks_about_at_most_three_neighbours(db_path):
    model = ScriptedDecisionModel(rule=lambda _r: "no")
    with gated(db_path, model) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=f"deploy note number {i}") for i in range(6))))
        memory.remember("deploy note number seven")
    assert model.calls == 3


def test_one_backend_fails_search_rerank_but_not_the_gated_write(db_path):
    """SPEC §4: the same backend instance serves both roles; the failure policy belongs to the role."""
    backend = ScriptedDecisionModel(rule=lambda _r: InferenceUnavailableError("provider down"))
    with gated(db_path, backend) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(EXISTING)
        with pytest.raises(InferenceUnavailableError):
            memory.search(SearchMemoryRequest(query="deploy", limit=3),
                          reranker=DecisionReranker(for_role(backend, "memory.rerank")))
        result = memory.remember("team deploy schedule again: Fridays")
        assert len(result.citations) == 1
        assert memory.head().revision == 2


def test_one_backend_in_both_runtime_roles_still_lets_the_write_proceed(db_path):
    backend = ScriptedDecisionModel(rule=lambda _r: InferenceUnavailableError("provider down"))
    with open_store(db_path, write_gate=backend,
                    reranker=DecisionReranker(for_role(backend, "memory.rerank"))) as runtime:
        memory = runtime.memory.for_scope("ops")
        memory.remember(EXISTING)
        with pytest.raises(InferenceUnavailableError):
            memory.search(SearchMemoryRequest(query="deploy", limit=3))
        result = memory.remember("team deploy schedule again: Fridays")  # the gate searches coarse only
        assert len(result.citations) == 1
