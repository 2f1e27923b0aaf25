"""``pcmem bench locomo``: retrieval quality on LoCoMo, driven only through pcmem's public interfaces (SPEC §5).

Each conversation becomes one scope with one entry per dialog turn (entry id = dialog id); every question is searched
with the normal API in each requested mode. The benchmark never builds a reranker itself, never selects or reorders
hits: it names a policy and the runtime composes it. Candidate-pool metrics come from the rerank trace, final
metrics from the returned hits.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcmem.compose.runtime import SyncRuntime
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.decision.memo import MemoDecisionModel
from pcmem.errors import InferenceError, InputError, RerankError
from pcmem.rerank.decision import DecisionReranker
from pcmem.rerank.port import MemoryReranker
from pcmem.search.fusion import fusion_parameters
from pcmem.settings import SearchFusion
from pcmem.types.progress import Progress
from pcmem.types.search import SearchMemoryRequest, SearchPage
from pcmem_bench import metrics, slug
from pcmem_bench.locomo_data import CATEGORY_NAMES, Conversation, Question
from pcmem_bench.locomo_ingest import ALONE_SAMPLE, ingest_measured

KS = (5, 10, 30)


def select_questions(
    conversations: Sequence[Conversation], categories: Sequence[int], limit: int | None
) -> list[Question]:
    """Questions of the chosen categories with evidence; ``limit`` takes an evenly spaced, category-stratified subset,
    interleaved so that every prefix is stratified too (a run cut short still covers each category in proportion)."""
    pool = [q for c in conversations for q in c.questions if q.category in categories and q.evidence]
    if limit is None or limit >= len(pool):
        return pool
    by_category: dict[int, list[Question]] = defaultdict(list)
    for question in pool:
        by_category[question.category].append(question)
    chosen: list[tuple[float, int, Question]] = []
    for category, questions in sorted(by_category.items()):
        share = max(1, round(limit * len(questions) / len(pool)))
        step = len(questions) / share
        count = min(share, len(questions))
        chosen += [((i + 0.5) / count, category, questions[int(i * step)]) for i in range(count)]
    kept = sorted(chosen, key=lambda item: (item[1], item[0]))[:limit]  # the same subset as before: by category
    return [question for _position, _category, question in sorted(kept, key=lambda item: (item[0], item[1]))]


@dataclass
class QuestionResult:
    question: Question
    ranked: list[str]  # dialog ids of the final hits
    pool: list[str] | None  # dialog ids of the coarse candidates (rerank runs only)
    search_ms: float
    rerank_ms: float | None = None
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    decision_calls: int = 0
    used_fallback: bool = False
    #: Per-candidate verdicts of a decision rerank: {"rank", "outcome", "yes_probability"}, in coarse order.
    decisions: list[dict[str, Any]] = field(default_factory=list)
    #: Verdicts served by a decision memo shared between policies, and the rerank latency with each of them
    #: charged at its first computation (what this policy costs alone); None without a memo.
    memo_hits: int = 0
    rerank_ms_first: float | None = None
    #: The page size asked for (None in logs written before it was recorded).
    limit: int | None = None

    def at(self, k: int) -> list[str]:
        """The list recall@k is measured on: the page, or past the page size asked for the wider list (the coarse
        pool, or a 30-hit search). A reranker that returned fewer hits than asked is measured on what it returned."""
        page_size = self.limit if self.limit is not None else len(self.ranked)
        return self.pool if self.pool is not None and k > page_size else self.ranked

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QuestionResult:
        fields = dict(data)
        q = fields.pop("question")
        return cls(question=Question(q["conversation"], q["index"], q["question"], q["category"],
                                     tuple(q["evidence"])), **fields)


#: Receives each question's result as soon as it is known (the CLI appends it to a JSONL file).
ResultSink = Callable[[str, str, str, str, QuestionResult], None]  # embedder, backend, mode, rerank, result


@dataclass
class ModeRun:
    mode: str
    rerank: str
    results: list[QuestionResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # questions whose search raised (e.g. a rerank timeout)


def run_policies(
    runtime: SyncRuntime, questions: Sequence[Question], mode: str, *, limit: int,
    rerankers: Mapping[str, MemoryReranker | None], progress: Progress | None = None,
    done_before: Mapping[str, Mapping[tuple[str, int], QuestionResult]] | None = None,
    sinks: Mapping[str, Callable[[QuestionResult | tuple[Question, str]], None] | None] | None = None,
) -> list[ModeRun]:
    """Search every question with every rerank label (``None``: coarse order), question by question so a run cut
    short has every policy on the same questions. Without a reranker also search at 30 so frac@30 reflects a 30-hit
    page. ``done_before``: per label, results of an earlier, interrupted run, reused instead of searching again;
    ``sinks``: per label, gets each new result (or failure) as it completes."""
    runs = {label: ModeRun(mode=mode, rerank=label) for label in rerankers}
    for done, question in enumerate(questions, start=1):
        for label, reranker in rerankers.items():
            earlier = (done_before or {}).get(label, {}).get((question.conversation, question.index))
            if earlier is not None:
                runs[label].results.append(earlier)
                continue
            outcome = _ask(runtime, question, mode, limit, reranker)
            if isinstance(outcome, str):
                runs[label].failures.append(outcome)
            else:
                runs[label].results.append(outcome)
            sink = (sinks or {}).get(label)
            if sink:
                sink(outcome if isinstance(outcome, QuestionResult) else (question, outcome))
        if progress:
            progress(done, len(questions))
    return list(runs.values())


def _ask(runtime: SyncRuntime, question: Question, mode: str, limit: int,
         reranker: MemoryReranker | None) -> QuestionResult | str:
    """One question's result, or the failure of its fail-closed rerank (never replaced by coarse hits)."""
    memory = runtime.memory.for_scope(f"locomo-{question.conversation}")
    memo = _memo_of(reranker)
    if memo is not None:
        memo.take_counters()
    started = time.perf_counter()
    try:
        page = memory.search(SearchMemoryRequest(query=question.question, limit=limit, mode=mode),
                             reranker=reranker if reranker is not None else "default")
    except (InferenceError, RerankError) as error:
        return f"{question.conversation}#{question.index}: {type(error).__name__}: {error}"
    search_ms = (time.perf_counter() - started) * 1000
    result = _result(question, page, search_ms)
    result.limit = limit
    if memo is not None and result.rerank_ms is not None:
        result.memo_hits, saved_ms = memo.take_counters()
        result.rerank_ms_first = result.rerank_ms + saved_ms
    if page.rerank is None and limit < max(KS):
        wide = memory.search(SearchMemoryRequest(query=question.question, limit=max(KS), mode=mode))
        result.pool = [hit.citation.entry_id for hit in wide.hits]
    return result


def _memo_of(reranker: MemoryReranker | None) -> MemoDecisionModel | None:
    if isinstance(reranker, DecisionReranker) and isinstance(reranker.decision_model, MemoDecisionModel):
        return reranker.decision_model
    return None


def _result(question: Question, page: SearchPage, search_ms: float) -> QuestionResult:
    ranked = [hit.citation.entry_id for hit in page.hits]
    trace = page.rerank
    if trace is None:
        return QuestionResult(question, ranked, None, search_ms)
    return QuestionResult(
        question, ranked, [hit.citation.entry_id for hit in trace.candidates], search_ms, trace.latency_ms,
        trace.usage.requests, trace.usage.input_tokens, trace.usage.output_tokens, trace.decision_calls or 0,
        trace.used_fallback, [d.model_dump() for d in trace.decisions],
    )


def summarise(results: Sequence[QuestionResult]) -> dict:
    """Metrics over ``results``: turn recall (frac/all @5/10/30), session hit/recall/MRR @10, nDCG@10, latency."""
    if not results:
        return {"n": 0}
    out: dict = {"n": len(results)}
    for k in KS:
        lists = [r.at(k) for r in results]
        out[f"frac@{k}"] = _mean(metrics.fraction_found(ranked, r.question.evidence, k) for ranked, r in zip(lists, results))
        out[f"all@{k}"] = _mean(metrics.all_found(ranked, r.question.evidence, k) for ranked, r in zip(lists, results))
    out["session_hit@10"] = _mean(metrics.session_hit(r.ranked, r.question.evidence, 10) for r in results)
    out["session_recall@10"] = _mean(metrics.session_recall(r.ranked, r.question.evidence, 10) for r in results)
    out["session_mrr"] = _mean(metrics.session_mrr(r.ranked, r.question.evidence) for r in results)
    out["ndcg@10"] = _mean(metrics.ndcg(r.ranked, r.question.evidence, 10) for r in results)
    latencies = [r.search_ms for r in results]
    out["search_ms_p50"] = metrics.percentile(latencies, 50)
    out["search_ms_p95"] = metrics.percentile(latencies, 95)
    reranked = [r for r in results if r.rerank_ms is not None]
    rerank_times = [r.rerank_ms_first if r.rerank_ms_first is not None else r.rerank_ms
                    for r in reranked if r.rerank_ms is not None]
    if reranked:
        out["pool_frac@30"] = _mean(metrics.fraction_found(r.pool or [], r.question.evidence, 30) for r in reranked)
        # the coarse order on exactly these questions (the pool's first k): the paired baseline for a run cut short
        for k in (5, 10):
            out[f"coarse_frac@{k}"] = _mean(metrics.fraction_found(r.pool or [], r.question.evidence, k)
                                            for r in reranked)
        out["coarse_ndcg@10"] = _mean(metrics.ndcg(r.pool or [], r.question.evidence, 10) for r in reranked)
        out["rerank_ms_p50"] = metrics.percentile(rerank_times, 50)
        out["rerank_ms_p95"] = metrics.percentile(rerank_times, 95)
        out["rerank_requests"] = sum(r.requests for r in reranked)
        out["rerank_input_tokens"] = sum(r.input_tokens for r in reranked)
        out["rerank_output_tokens"] = sum(r.output_tokens for r in reranked)
        out["decision_calls"] = sum(r.decision_calls for r in reranked)
        out["fallback_rate"] = _mean(r.used_fallback for r in reranked)
        verdicts = [d for r in reranked for d in r.decisions]
        if verdicts:
            for outcome in ("yes", "no", "abstain"):
                out[f"decisions_{outcome}"] = sum(1 for d in verdicts if d["outcome"] == outcome)
        if any(r.rerank_ms_first is not None for r in reranked):
            measured = [r.rerank_ms for r in reranked if r.rerank_ms is not None]
            out["memo_hits"] = sum(r.memo_hits for r in reranked)
            out["rerank_ms_measured_p50"] = metrics.percentile(measured, 50)
    return out


def report(run: ModeRun) -> dict:
    by_category: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in run.results:
        by_category[f"{result.question.category}-{CATEGORY_NAMES[result.question.category]}"].append(result)
    out = {
        "mode": run.mode,
        "rerank": run.rerank,
        "failed_questions": run.failures,
        "overall": summarise(run.results),
        "by_category": {name: summarise(items) for name, items in sorted(by_category.items())},
    }
    if any(r.decisions for r in run.results):  # per-candidate verdicts: kept for analysis
        out["questions"] = [r.to_json() for r in run.results]
    return out


def _mean(values) -> float:  # noqa: ANN001 - any iterable of numbers/bools
    items = [float(v) for v in values]
    return sum(items) / len(items) if items else 0.0


def markdown(reports: Sequence[dict]) -> str:
    columns = ["frac@5", "frac@10", "frac@30", "all@10", "session_hit@10", "session_mrr", "ndcg@10",
               "search_ms_p50", "search_ms_p95"]
    lines = ["| embedder | mode | rerank | category | n | " + " | ".join(columns) + " |",
             "|---" * (len(columns) + 5) + "|"]
    for rep in reports:
        rows = [("all", rep["overall"])] + list(rep["by_category"].items())
        for name, stats in rows:
            cells = [_fmt(stats.get(c)) for c in columns]
            lines.append(f"| {rep.get('embedder', '')} | {rep['mode']} | {rep['rerank']} | {name} | {stats['n']} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


_RERANK_COLUMNS = ("frac@5", "coarse_frac@5", "frac@10", "coarse_frac@10", "frac@30", "ndcg@10", "coarse_ndcg@10",
                   "rerank_ms_p50", "rerank_ms_p95", "decision_calls",
                   "fallback_rate", "decisions_yes", "decisions_no", "decisions_abstain", "memo_hits")


def rerank_markdown(reports: Sequence[dict]) -> str:
    """One row per rerank stage: quality next to the coarse order's on the same questions, rerank latency (first
    computation), calls, fallbacks, failures."""
    lines = ["| embedder | mode | rerank | n | failures | " + " | ".join(_RERANK_COLUMNS) + " |",
             "|---" * (len(_RERANK_COLUMNS) + 5) + "|"]
    for rep in reports:
        stats = rep["overall"]
        cells = [_fmt(stats.get(c)) if not isinstance(stats.get(c), int) else str(stats[c]) for c in _RERANK_COLUMNS]
        lines.append(f"| {rep.get('embedder', '')} | {rep['mode']} | {rep['rerank']} | {stats['n']} | "
                     f"{len(rep['failed_questions'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.1f}" if value >= 2 else f"{value:.3f}"


_COMPARED = ("frac@5", "frac@10", "frac@30", "all@10", "session_hit@10", "session_mrr", "ndcg@10")


def compare_backends(runs: Sequence[dict]) -> list[dict]:
    """Each further backend against the first one run with the same embedder, per mode: metric differences and the
    p50/p95 search latency ratio."""
    rows = []
    for run in runs:
        first = next(r for r in runs if r.get("embedder") == run.get("embedder"))
        if first is run:
            continue
        base = {r["mode"]: r["overall"] for r in first["reports"]}
        for rep in run["reports"]:
            ref, got = base.get(rep["mode"]), rep["overall"]
            if not ref or not ref.get("n") or not got.get("n"):
                continue
            row = {"backend": run["backend"], "vs": first["backend"], "embedder": run.get("embedder"),
                   "mode": rep["mode"], "n": got["n"]}
            row.update({f"delta_{k}": got[k] - ref[k] for k in _COMPARED})
            row["ratio_search_ms_p50"] = got["search_ms_p50"] / ref["search_ms_p50"]
            row["ratio_search_ms_p95"] = got["search_ms_p95"] / ref["search_ms_p95"]
            rows.append(row)
    return rows


def comparison_markdown(rows: Sequence[dict]) -> str:
    columns = [f"delta_{k}" for k in _COMPARED] + ["ratio_search_ms_p50", "ratio_search_ms_p95"]
    lines = ["| backend | vs | mode | n | " + " | ".join(columns) + " |", "|---" * (len(columns) + 4) + "|"]
    for row in rows:
        cells = [f"{row[c]:+.3f}" if c.startswith("delta") else f"{row[c]:.2f}x" for c in columns]
        lines.append(f"| {row['backend']} | {row['vs']} | {row['mode']} | {row['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: Wraps one stage of the matrix (``label``) and yields its progress callback; the CLI draws a bar with it.
StageBar = Callable[[str], AbstractContextManager[Progress]]


@dataclass(frozen=True)
class Matrix:
    """One LoCoMo run: every embedder × backend ingests the conversations once and answers the questions per mode
    and rerank policy (``reranks``: labels, ``"none"`` for the coarse order)."""

    conversations: Sequence[Conversation]
    questions: Sequence[Question]
    modes: Sequence[str]
    embedders: Sequence[str]
    backends: Sequence[str]
    reranks: Sequence[str] = ("none",)
    limit: int = 10
    candidates: int = 30
    store: str | None = None  # a DuckDB file to ingest into and reuse (one per embedder when several)
    seekdb_store: str | None = None  # a seekdb store to ingest into and reuse
    inference: InferenceConfig = field(default_factory=InferenceConfig)
    alone_sample: int = ALONE_SAMPLE  # texts for the embedder-alone reference after an ingest (0: skip)
    fusion: SearchFusion = "rrf"  # how every search fuses its channels (rrf: the contract's)

    def __post_init__(self) -> None:
        if not self.embedders:
            raise InputError("--embedder needs at least one embedder")
        if len(self.embedders) > 1 and self.seekdb_store and "seekdb" in self.backends:
            raise InputError("--seekdb-store names one store, and each embedder needs its own: give one --embedder "
                             "with it, or leave --seekdb-store out (a database per embedder is then made)")

    def target(self, backend: str, embedder: str, workdir: Path) -> str | Path:
        """Where ``embedder``'s data lives on ``backend``: the given store, or a temporary one under ``workdir``."""
        from pcmem_bench.perf import store_target

        several = len(self.embedders) > 1
        if backend == "duckdb":
            base = Path(self.store) if self.store else workdir / "locomo.duckdb"
            return base.with_name(f"{base.stem}.{slug(embedder)}{base.suffix}") if several else base
        return self.seekdb_store or store_target("seekdb", workdir, f"locomo_{slug(embedder)}" if several else "locomo")


class ResultLog:
    """Each question's result, one JSON line as it completes; read back, it lets an interrupted run resume (the
    stages' finished questions are reused, not searched again) and gives figures for whatever was done."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.done: dict[tuple[str, str, str, str], dict[tuple[str, int], QuestionResult]] = defaultdict(dict)
        self.failed: dict[tuple[str, str, str, str], dict[tuple[str, int], str]] = defaultdict(dict)
        if self.path and self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                row = json.loads(line)
                key = (row["embedder"], row["backend"], row["mode"], row["rerank"])
                if "failure" in row:
                    self.failed[key][(row["question"][0], row["question"][1])] = row["failure"]
                    continue
                result = QuestionResult.from_json(row["result"])
                self.done[key][(result.question.conversation, result.question.index)] = result

    def stage(self, embedder: str, backend: str, mode: str, rerank: str) -> dict[tuple[str, int], QuestionResult]:
        return self.done.get((embedder, backend, mode, rerank), {})

    def sink(self, embedder: str, backend: str, mode: str, rerank: str
             ) -> Callable[[QuestionResult | tuple[Question, str]], None] | None:
        if self.path is None:
            return None
        path = self.path

        def write(item: QuestionResult | tuple[Question, str]) -> None:
            row: dict[str, Any] = {"embedder": embedder, "backend": backend, "mode": mode, "rerank": rerank}
            if isinstance(item, QuestionResult):
                row["result"] = item.to_json()
            else:
                row.update(question=[item[0].conversation, item[0].index], failure=item[1])
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")
        return write

    def reports(self) -> list[dict]:
        """A report per logged stage (for a run cut short: n is what was done; failures not retried since count)."""
        out = []
        for key in dict.fromkeys([*self.done, *self.failed]):
            embedder, backend, mode, rerank = key
            results = self.done.get(key, {})
            failures = [text for q, text in self.failed.get(key, {}).items() if q not in results]
            run = ModeRun(mode=mode, rerank=rerank, results=list(results.values()), failures=failures)
            out.append({**report(run), "backend": backend, "embedder": embedder})
        return out


def run_matrix(matrix: Matrix, rerankers: Mapping[str, MemoryReranker | None] | MemoryReranker | None,
               bar: StageBar, log: ResultLog | None = None) -> dict[str, Any]:
    """Run every embedder × backend × mode × rerank label of ``matrix``; temporary stores are removed afterwards.
    ``rerankers`` maps each label of ``matrix.reranks`` to its reranker (a single reranker: every label)."""
    if not isinstance(rerankers, Mapping):
        rerankers = {label: rerankers for label in matrix.reranks}
    config = RuntimeConfig(memory_rerank_candidate_limit=matrix.candidates, memory_search_fusion=matrix.fusion)
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="pcmem-locomo-"))
    try:
        runs = [_run_store(matrix, config, rerankers, backend, embedder, matrix.target(backend, embedder, workdir), bar,
                           log or ResultLog(None))
                for embedder in matrix.embedders for backend in matrix.backends]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    conversations = matrix.conversations
    return {
        "data": None, "stores": [r["store"] for r in runs], "limit": matrix.limit, "candidates": matrix.candidates,
        "fusion": matrix.fusion, "fusion_parameters": fusion_parameters(matrix.fusion),
        "questions": len(matrix.questions),
        "ingest_entries_per_s": {f"{r['backend']}/{r['embedder']}": r["ingest_entries_per_s"] for r in runs},
        "wall_seconds": round(time.perf_counter() - started, 1), "model": matrix.inference.generation_model,
        "evidence_repaired": sorted({r for c in conversations for r in c.repaired}),
        "evidence_unresolved": sorted({r for c in conversations for r in c.unresolved}),
        "reports": [rep for r in runs for rep in r["reports"]],
        "runs": runs,
        "comparison": compare_backends(runs),
    }


def _run_store(matrix: Matrix, config: RuntimeConfig, rerankers: Mapping[str, MemoryReranker | None], backend: str,
               embedder: str, where: str | Path, bar: StageBar, log: ResultLog) -> dict[str, Any]:
    """Ingest into one store and search it in every mode, with every rerank label."""
    with SyncRuntime.open(where, config=config, inference=matrix.inference, embedder=embedder) as runtime:
        with bar(f"ingesting ({backend}, {embedder})") as advance:
            measured = ingest_measured(runtime, matrix.conversations, advance, matrix.alone_sample)
        reports = []
        for mode in matrix.modes:
            labels = {label: rerankers.get(label) for label in matrix.reranks}
            with bar(f"{mode} ({', '.join(labels)}, {backend}, {embedder})") as advance:
                runs = run_policies(runtime, matrix.questions, mode, limit=matrix.limit, rerankers=labels,
                                    progress=advance,
                                    done_before={label: log.stage(embedder, backend, mode, label) for label in labels},
                                    sinks={label: log.sink(embedder, backend, mode, label) for label in labels})
            reports += [{**report(run), "backend": backend, "embedder": embedder} for run in runs]
    rate = measured["ingest_entries_per_s"]
    return {"backend": backend, "embedder": embedder, "store": str(where),
            "ingest_entries_per_s": None if rate is None else round(rate, 1),
            "ingest": {k: round(v, 3) if isinstance(v, float) else v for k, v in measured.items()},
            "reports": reports}
