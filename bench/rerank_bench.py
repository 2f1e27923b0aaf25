"""``pcmem bench rerank``: listwise and decision rerank latency against the llama.cpp floor for the same tokens."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

from pcmem.compose.decisions import decision_backend
from pcmem.compose.models import load_model
from pcmem.compose.rerankers import build_reranker
from pcmem.config import InferenceConfig
from pcmem.inference.llama_cpp import LlamaCppGenerator
from pcmem.rerank.decision import QUESTION
from pcmem.rerank.listwise import ListwiseReranker
from pcmem.types.decision import DecisionRequest
from pcmem.types.memory import Citation
from pcmem.types.search import MemoryHit
from pcmem.types.usage import Usage
from pcmem_bench.llama_floor import eval_seconds, measure_floor

QUERY = "Who signs off every build before a release, and on which day do releases go out?"
_SUBJECTS = ("Priya", "Marco", "the release team", "the support desk", "the designer", "Tanaka-san")
_FACTS = (
    "signs off every build after the smoke test", "books the offsite venue in Porto", "moved releases to Tuesdays",
    "answers support e-mail within one business day", "drinks oolong tea and never coffee",
    "translates the Japanese documentation every month", "owns the release checklist",
    "blocks Wednesday afternoons for focused work", "runs CI on two self-hosted Linux runners",
    "collects no telemetry by default",
)


def candidate_pool(size: int = 30) -> list[MemoryHit]:
    """A deterministic pool of realistic one-sentence memories (the coarse pool a search would hand over)."""
    hits = []
    for i in range(size):
        text = f"{_SUBJECTS[i % len(_SUBJECTS)]} {_FACTS[(i * 7) % len(_FACTS)]} (noted in week {i + 1})."
        citation = Citation(artifact_id="mem_bench", revision=1, entry_id=f"e{i:02}", entry_version_id=f"v{i:02}")
        hits.append(MemoryHit(citation=citation, text=text, kind="fact", score=1 / (61 + i), matched_by=("fts",)))
    return hits


@dataclass(frozen=True)
class RerankBench:
    model: str
    policy: str
    candidates: int
    prompt_tokens: int
    output_tokens: int
    measured_s: float
    floor_s: float

    @property
    def ratio(self) -> float:
        return self.measured_s / self.floor_s


def bench_listwise(model_name: str, repeats: int = 3) -> RerankBench:
    inference = InferenceConfig(generation_model=f"llama-cpp:{model_name}", generation_timeout_seconds=600)
    reranker = build_reranker("listwise", inference)
    assert isinstance(reranker, ListwiseReranker)
    model = load_model(inference)
    pool = candidate_pool()
    times: list[float] = []
    usage = Usage()
    for _ in range(repeats):
        model.llm.reset()  # a new search's prompt shares nothing with the last one: start cold, like the floor
        started = time.perf_counter()
        decision = reranker.rerank(QUERY, pool, 10)
        times.append(time.perf_counter() - started)
        usage = decision.usage
    generator = reranker.generator
    assert isinstance(generator, LlamaCppGenerator)
    prompt = generator.last_prompt  # the exact chat-formatted text that was prefilled
    floor = measure_floor(model, prompt)
    return RerankBench(model_name, "listwise", len(pool), usage.input_tokens, usage.output_tokens,
                       statistics.median(times), floor.seconds(usage.input_tokens, usage.output_tokens))


def bench_decision(model_name: str, candidates: int = 30) -> tuple[RerankBench, float]:
    """Per-candidate decision latency vs the bare llama.cpp forward pass over the same fresh tokens (the shared
    query prefix already cached in both), and the wall time of a full 30-candidate decision rerank."""
    inference = InferenceConfig(generation_model=f"llama-cpp:{model_name}", generation_timeout_seconds=600)
    model = load_model(inference)
    backend = decision_backend(model, inference)
    pool = candidate_pool(candidates)

    def request(hit: MemoryHit) -> DecisionRequest:
        return DecisionRequest(decision_kind="memory.rerank", question=QUESTION, subject=hit.text, evidence=(QUERY,))

    model.llm.reset()
    first = backend.evaluate(request(pool[0]))
    measured, floor = [], []
    for hit in pool[1:]:
        started = time.perf_counter()
        backend.evaluate(request(hit))
        measured.append(time.perf_counter() - started)
        tokens = model.llm.input_ids[: model.llm.n_tokens].tolist()
        floor.append(eval_seconds(model, tokens, model.last_prefix))  # same tokens, same cached prefix
    reranker = build_reranker("decision", inference)
    model.llm.reset()
    started = time.perf_counter()
    reranker.rerank(QUERY, pool, len(pool))  # limit = pool size: every candidate is decided
    wall = time.perf_counter() - started
    bench = RerankBench(model_name, "decision (per candidate)", len(pool), first.usage.input_tokens, 1,
                        statistics.median(measured), statistics.median(floor))
    return bench, wall


def as_row(bench: RerankBench) -> dict:
    row = asdict(bench)
    row["ratio"] = round(bench.ratio, 3)
    return row
