"""``pcmem bench locomo-fusion``: choose and check the non-contract fusions' parameters on LoCoMo, honestly.

Each question's admitted channel lists (BM25 / cosine scores included) are fetched once through the search service,
for a 10-hit and a 30-hit search (each has its own channel depth, SPEC §2 step 4), and every fusion is then run
offline with the very functions a search uses (:mod:`pcmem.search.fusion`) over a grid of parameter values.

Two folds: parameters are tuned on conversations 0-4 and reported on 5-9, and the other way round. The rule, fixed
before looking at held-out figures: the value with the best frac@10 on the tuning half among those whose frac@30
there is at least RRF's (the hybrid pool's @30 kept); ties go to the value nearest RRF's behaviour (the smaller
departure from equal weights). The held-out figures measure that procedure.

Each family's value over all ten conversations (``refit``) comes from the same rule, the @30 floor required on each
half (the target is stated per untouched half); its per-half figures are in-sample and reported as such. The value
pcmem ships is chosen from these over every measured preset (see :mod:`pcmem.search.fusion`).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pcmem.compose.runtime import SyncRuntime
from pcmem.search.fusion import NORMALISATIONS, Fused, convex_fuse, rrf_fuse, weighted_rrf_fuse
from pcmem.search.service import SearchService
from pcmem.types.progress import Progress
from pcmem.types.search import Candidate, SearchMemoryRequest
from pcmem_bench import jsonl, metrics
from pcmem_bench.locomo_data import CATEGORY_NAMES, Conversation, Question
from pcmem_bench.locomo_ingest import ingest

DEPTHS = (10, 30)  # the page sizes measured: frac@10 on a 10-hit search, frac@30 on a 30-hit search
GRID = tuple(round(step * 0.05, 2) for step in range(21))  # 0.00, 0.05, ..., 1.00
RRF_K_GRID = (1, 5, 10, 20, 40, 60)  # weighted RRF's constant: 60 is the contract's (Cormack et al. 2009)
HALVES = ((0, 1, 2, 3, 4), (5, 6, 7, 8, 9))

#: Each tuned family (a label prefix): weighted RRF over its weight and k, convex over alpha per normalisation.
FAMILIES = ("weighted_rrf", *(f"convex:{norm}" for norm in NORMALISATIONS))

Channels = dict[str, list[Candidate]]
FusionFn = Callable[[Mapping[str, Sequence[Candidate]], int], list[Fused]]


@dataclass
class FetchedQuestion:
    """One question and its admitted channel lists, per page size."""

    conversation: int  # 0-based position in locomo10.json
    question: Question
    channels: dict[int, Channels]  # page size -> {"fts": [...], "vector": [...]}
    fetch_ms: float

    def to_json(self) -> dict[str, Any]:
        q = self.question
        return {"conversation": self.conversation, "question": [q.conversation, q.index, q.question, q.category,
                                                                 list(q.evidence)],
                "fetch_ms": self.fetch_ms,
                "channels": {str(depth): {name: [[c.artifact_id, c.entry_id, c.entry_version_id, c.score,
                                                  c.matched_terms] for c in found]
                                          for name, found in lists.items()}
                             for depth, lists in self.channels.items()}}

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> FetchedQuestion:
        conv, index, text, category, evidence = row["question"]
        channels = {int(depth): {name: [Candidate(*item) for item in found] for name, found in lists.items()}
                    for depth, lists in row["channels"].items()}
        return cls(row["conversation"], Question(conv, index, text, category, tuple(evidence)), channels,
                   row["fetch_ms"])


def fetch(runtime: SyncRuntime, conversations: Sequence[Conversation], questions: Sequence[Question],
          progress: Progress | None = None) -> list[FetchedQuestion]:
    """Ingest (unless already there), then each question's admitted hybrid channels at every page size."""
    ingest(runtime, conversations)
    position = {c.sample_id: i for i, c in enumerate(conversations)}
    service = runtime.memory.parts.search
    out = []
    for done, question in enumerate(questions, start=1):
        out.append(fetch_question(service, position[question.conversation], question))
        if progress:
            progress(done, len(questions))
    return out


def fetch_question(service: SearchService, conversation: int, question: Question) -> FetchedQuestion:
    """One question's admitted hybrid channels at every page size, and what fetching them cost per page size."""
    scope = (f"locomo-{question.conversation}",)
    started = time.perf_counter()
    channels = {depth: service.channel_lists(scope, SearchMemoryRequest(query=question.question, limit=depth,
                                                                        mode="hybrid")).channels
                for depth in DEPTHS}
    return FetchedQuestion(conversation, question, channels, (time.perf_counter() - started) * 1000 / len(DEPTHS))


def save(fetched: Sequence[FetchedQuestion], path: str | Path) -> None:
    jsonl.write((item.to_json() for item in fetched), path)


def load_fetched(path: str | Path) -> list[FetchedQuestion]:
    return [FetchedQuestion.from_json(row) for row in jsonl.read(path)]


def candidates() -> dict[str, FusionFn]:
    """Every fusion evaluated, by label: the single channels, the contract's RRF, and the two families' grids."""
    out: dict[str, FusionFn] = {
        "fts-only": lambda ch, k: rrf_fuse({"fts": ch["fts"]}, k),
        "vector-only": lambda ch, k: rrf_fuse({"vector": ch["vector"]}, k),
        "rrf": rrf_fuse,
    }
    for value in GRID:
        for k in RRF_K_GRID:
            out[f"weighted_rrf:k={k}:vector_weight={value}"] = partial(weighted_rrf_fuse, vector_weight=value, k=k)
        for norm in NORMALISATIONS:
            out[f"convex:{norm}:alpha={value}"] = partial(convex_fuse, alpha=value, normalisation=norm)
    return out


def scores(fetched: Sequence[FetchedQuestion], fusion: FusionFn) -> list[tuple[FetchedQuestion, float, float]]:
    """Per question: (question, frac@10 of a 10-hit search, frac@30 of a 30-hit search)."""
    out = []
    for item in fetched:
        found = {depth: [f.candidate.entry_id for f in fusion(item.channels[depth], depth)] for depth in DEPTHS}
        out.append((item, metrics.fraction_found(found[10], item.question.evidence, 10),
                    metrics.fraction_found(found[30], item.question.evidence, 30)))
    return out


def summary(rows: Sequence[tuple[FetchedQuestion, float, float]]) -> dict[str, Any]:
    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    by_category: dict[str, list[tuple[FetchedQuestion, float, float]]] = defaultdict(list)
    for row in rows:
        category = row[0].question.category
        by_category[f"{category}-{CATEGORY_NAMES[category]}"].append(row)
    return {"n": len(rows), "frac@10": mean([r[1] for r in rows]), "frac@30": mean([r[2] for r in rows]),
            "by_category": {name: {"n": len(items), "frac@10": mean([r[1] for r in items]),
                                   "frac@30": mean([r[2] for r in items])}
                            for name, items in sorted(by_category.items())}}


def _departure(label: str) -> float:
    """How far a candidate is from equal weights (the tie-break toward RRF's behaviour)."""
    if "=" not in label:
        return 0.0
    return abs(float(label.rsplit("=", 1)[1]) - 0.5)


def choose(table: Mapping[str, Mapping[str, Any]], family: str) -> str:
    """The tuning rule (module docstring) over one family's labels in ``table`` (label -> summary)."""
    floor = table["rrf"]["frac@30"]
    eligible = [label for label in table if label.startswith(family + ":") and table[label]["frac@30"] >= floor]
    if not eligible:
        return "rrf"
    return max(eligible, key=lambda label: (round(table[label]["frac@10"], 9), -_departure(label)))


def refit(tables: Sequence[Mapping[str, Mapping[str, Any]]], family: str) -> str:
    """The value to ship: best frac@10 over both halves among values keeping RRF's frac@30 on each half."""
    weights = [table["rrf"]["n"] for table in tables]

    def pooled(label: str, key: str) -> float:
        return sum(t[label][key] * w for t, w in zip(tables, weights, strict=True)) / max(1, sum(weights))

    eligible = [label for label in tables[0] if label.startswith(family + ":")
                and all(t[label]["frac@30"] >= t["rrf"]["frac@30"] for t in tables)]
    if not eligible:
        return "rrf"
    return max(eligible, key=lambda label: (round(pooled(label, "frac@10"), 9), -_departure(label)))


def fusion_ms(fetched: Sequence[FetchedQuestion], fusion: FusionFn, depth: int = 30) -> float:
    """Mean time one fusion of a question's channel lists takes (the only cost a fusion adds to a search)."""
    started = time.perf_counter()
    for item in fetched:
        fusion(item.channels[depth], depth)
    return (time.perf_counter() - started) * 1000 / max(1, len(fetched))


def evaluate(fetched: Sequence[FetchedQuestion]) -> dict[str, Any]:
    """Both folds: per family, the value chosen on one half and its figures on the other, next to the single
    channels and RRF on that same half."""
    fusions = candidates()
    halves = [[f for f in fetched if f.conversation in half] for half in HALVES]
    tables = [{label: summary(scores(half, fn)) for label, fn in fusions.items()} for half in halves]
    families = FAMILIES
    folds = []
    for tune, held in ((0, 1), (1, 0)):
        fold: dict[str, Any] = {"tuned_on": list(HALVES[tune]), "reported_on": list(HALVES[held]), "rows": {}}
        for label in ("fts-only", "vector-only", "rrf"):
            fold["rows"][label] = tables[held][label]
        for family in families:
            chosen = choose(tables[tune], family)
            fold["rows"][f"{family} (chosen: {chosen})"] = {**tables[held][chosen], "chosen": chosen,
                                                            "on_tuning_half": {k: tables[tune][chosen][k]
                                                                               for k in ("frac@10", "frac@30")}}
        folds.append(fold)
    grid = {label: {"frac@10": [t[label]["frac@10"] for t in tables], "frac@30": [t[label]["frac@30"] for t in tables]}
            for label in fusions}
    shipped = {family: refit(tables, family) for family in families}
    timing = {label: fusion_ms(fetched, fusions[label]) for label in ("rrf", *shipped.values())}
    fetch_times = sorted(f.fetch_ms for f in fetched)
    return {"questions": len(fetched), "folds": folds, "refit": shipped, "fusion_ms_at_30": timing,
            "refit_by_half": {label: [t[label] for t in tables] for label in ("fts-only", "vector-only", "rrf",
                                                                              *shipped.values())},
            "grid_by_half": grid,
            "fetch_ms_p50": metrics.percentile(fetch_times, 50), "fetch_ms_p95": metrics.percentile(fetch_times, 95)}


def markdown(result: Mapping[str, Any]) -> str:
    lines = []
    for fold in result["folds"]:
        lines.append(f"\nTuned on conversations {fold['tuned_on']}, reported on {fold['reported_on']}:\n")
        categories = list(fold["rows"]["rrf"]["by_category"])
        lines.append("| fusion | n | frac@10 | frac@30 | " + " | ".join(f"{c} @10/@30" for c in categories) + " |")
        lines.append("|---" * (4 + len(categories)) + "|")
        for label, row in fold["rows"].items():
            cells = [f"{row['by_category'][c]['frac@10']:.3f} / {row['by_category'][c]['frac@30']:.3f}"
                     for c in categories]
            lines.append(f"| {label} | {row['n']} | {row['frac@10']:.3f} | {row['frac@30']:.3f} | "
                         + " | ".join(cells) + " |")
    lines.append("\nEach family's value by the same rule over all ten conversations (@30 floor on each half; "
                 "in-sample), frac@10 / frac@30 on conversations 0-4 and 5-9, and one fusion's cost at depth 30:\n")
    lines.append("| fusion | 0-4 | 5-9 | fusion ms |")
    lines.append("|---|---|---|---|")
    for label, halves in result["refit_by_half"].items():
        cost = result["fusion_ms_at_30"].get(label)
        lines.append(f"| {label} | " + " | ".join(f"{h['frac@10']:.3f} / {h['frac@30']:.3f}" for h in halves)
                     + f" | {'' if cost is None else f'{cost:.2f}'} |")
    return "\n".join(lines)
