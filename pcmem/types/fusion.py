"""What an embedder's preset declares about the non-contract fusions: the parameters tuned for its vectors."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WeightedRrf:
    """score = Σ w_channel / (k + rank): ``vector_weight`` for the vector channel, 1 - it for full text."""

    k: int
    vector_weight: float


@dataclass(frozen=True, slots=True)
class FusionDefaults:
    """The fusion parameters measured for one embedder's vectors (``None``: the shared value applies; see
    :mod:`pcmem.search.fusion` for the rule that chose them)."""

    convex_alpha: float | None = None
    weighted_rrf: WeightedRrf | None = None
