"""Admission and Reciprocal Rank Fusion: pure functions over channel results (SPEC §2, steps 5-6)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import get_args

from pcmem.types.search import Candidate, Channel

RRF_K = 60  # Cormack, Clarke & Büttcher 2009; the upstream contract's constant.
VECTOR_MIN_SIMILARITY = 0.3  # upstream contract: a vector candidate needs cosine similarity ≥ 0.3.
CHANNELS: tuple[Channel, ...] = get_args(Channel)  # the order in which matched_by lists channels


@dataclass(frozen=True, slots=True)
class Fused:
    candidate: Candidate
    score: float
    matched_by: tuple[str, ...]


def channel_candidate_count(coarse_limit: int) -> int:
    """Each channel returns max(4 · coarse_limit, 32) candidates (upstream contract)."""
    return max(4 * coarse_limit, 32)


def fts_required_terms(query_term_count: int) -> int:
    """|Q| ≤ 2 needs one matching term; otherwise at least max(2, ceil(0.25 · |Q|)) distinct terms."""
    if query_term_count <= 2:
        return 1
    return max(2, math.ceil(0.25 * query_term_count))


def admit_fts(candidates: Sequence[Candidate], query_term_count: int) -> list[Candidate]:
    needed = fts_required_terms(query_term_count)
    return [c for c in candidates if c.matched_terms >= needed]


def admit_vector(candidates: Sequence[Candidate]) -> list[Candidate]:
    return [c for c in candidates if c.score >= VECTOR_MIN_SIMILARITY]


def rrf_fuse(channels: Mapping[str, Sequence[Candidate]], limit: int) -> list[Fused]:
    """Fuse admitted channel lists: score = Σ 1/(60 + rank), ranks 1-based per channel; ties bytewise by identity."""
    scores: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    by_version: dict[str, Candidate] = {}
    for channel in CHANNELS:
        for rank, candidate in enumerate(channels.get(channel, ()), start=1):
            version_id = candidate.entry_version_id
            scores[version_id] = scores.get(version_id, 0.0) + 1.0 / (RRF_K + rank)
            matched.setdefault(version_id, []).append(channel)
            by_version.setdefault(version_id, candidate)
    ordered = sorted(by_version.values(), key=lambda c: (-scores[c.entry_version_id], c.key))
    return [
        Fused(candidate=c, score=scores[c.entry_version_id], matched_by=tuple(matched[c.entry_version_id]))
        for c in ordered[:limit]
    ]
