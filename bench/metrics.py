"""Retrieval metrics over ranked dialog ids (pure functions)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def fraction_found(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence turns among the top ``k`` (``frac@k``)."""
    top = set(ranked[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def all_found(ranked: Sequence[str], evidence: Sequence[str], k: int) -> bool:
    return fraction_found(ranked, evidence, k) == 1.0


def session_hit(ranked: Sequence[str], evidence: Sequence[str], k: int) -> bool:
    wanted = {session_of(e) for e in evidence}
    return any(session_of(r) in wanted for r in ranked[:k])


def session_recall(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    wanted = {session_of(e) for e in evidence}
    return len(wanted & {session_of(r) for r in ranked[:k]}) / len(wanted)


def session_mrr(ranked: Sequence[str], evidence: Sequence[str]) -> float:
    wanted = {session_of(e) for e in evidence}
    for rank, dia_id in enumerate(ranked, start=1):
        if session_of(dia_id) in wanted:
            return 1.0 / rank
    return 0.0


def ndcg(ranked: Sequence[str], evidence: Sequence[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k."""
    relevant = set(evidence)
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(ranked[:k]) if r in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
