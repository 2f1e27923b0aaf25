"""Admission and fusion: pure functions over channel results (RRF is the contract's)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from pcmem.settings import FusionSource, SearchFusion
from pcmem.types.fusion import FusionDefaults, WeightedRrf
from pcmem.types.search import Candidate, Channel

RRF_K = 60  # Cormack, Clarke & Büttcher 2009; the upstream contract's constant.
VECTOR_MIN_SIMILARITY = 0.3  # upstream contract: a vector candidate needs cosine similarity ≥ 0.3.
CHANNELS: tuple[Channel, ...] = get_args(Channel)  # the order in which matched_by lists channels


@dataclass(frozen=True, slots=True)
class Fused:
    candidate: Candidate
    score: float
    matched_by: tuple[Channel, ...]
    #: Each channel that admitted the candidate: its rank there (1-based) and the channel's own score (BM25, cosine).
    channels: dict[Channel, tuple[int, float]] = field(default_factory=dict, compare=False)


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
    return _fuse(channels, limit, lambda _channel, found: [1.0 / (RRF_K + rank) for rank in range(1, len(found) + 1)])


# --- Non-contract fusions ---------------------------------------------------------------------------------------
#
# Candidates from the literature, not from here, measured on LoCoMo (1,536 questions of categories 1-4) with
# ``pcmem bench locomo-fusion`` / ``locomo-pool`` (docs/benchmarks/retrieval.md: figures, commands): each parameter is
# tuned on conversations 0-4 and checked on 5-9, and the other way round; the rule (best frac@10 among values that keep
# RRF's frac@30) is fixed in :mod:`pcmem_bench.fusion_tune`. The value shipped is the same rule over all ten
# conversations, per measured embedder: its preset declares them (``EmbedderPreset.fusion``), found by the store's
# embedding model id; the values shown on the page.
#
# - ``convex``: the convex combination of normalised channel scores studied by Bruch, Gai & Ingber, "An Analysis of
#   Fusion Functions for Hybrid Retrieval" (ACM TOIS 42(1), 2023), which finds it beats RRF once its one weight is
#   tuned, with few queries. Min-max normalisation, alpha = 0.45 (MiniLM and mpnet), 0.70 (EmbeddingGemma). The
#   paper's other normalisations were measured and not kept: theoretical min-max (TM2C2) lost RRF's @30 held out
#   with MiniLM (and with mpnet before) and drifts to vector alone with EmbeddingGemma; z-score lost to min-max with
#   MiniLM on both held-out halves.
# - ``weighted-rrf``: RRF with a weight per channel and its constant k tuned (the "weighted RRF"; k = 60 is
#   Cormack et al.'s and the contract's). A small k lets the better channel's first ranks lead; the weight says which
#   channel is better. It is the one candidate measured that beat the better single channel on every held-out half
#   with both MiniLM (full text the better) and EmbeddingGemma (vector the better) and kept RRF's @30: k = 1 with
#   vector weight 0.40 (MiniLM; the shared value) and 0.75 (EmbeddingGemma); mpnet int8 (measured later, same
#   rule over all ten conversations, beating full text on both held-out halves): k = 5 with vector weight 0.55.

Normalisation = Literal["min-max", "theoretical-min", "z-score"]
NORMALISATIONS: tuple[Normalisation, ...] = get_args(Normalisation)
#: The lowest score each channel can give, for theoretical-min normalisation (Bruch et al.'s TM2C2): BM25 is never
#: negative; a cosine similarity is at least -1.
THEORETICAL_MIN: Mapping[str, float] = {"fts": 0.0, "vector": -1.0}

CONVEX_ALPHA = 0.45  # the vector channel's weight; the full-text channel's is 1 - alpha
CONVEX_NORMALISATION: Normalisation = "min-max"
WEIGHTED_RRF = WeightedRrf(k=1, vector_weight=0.40)  # MiniLM's (the bundled embedder), for every unmeasured one


def declared_defaults(model_id: str | None) -> FusionDefaults:
    """What the preset of ``model_id``'s vectors declares (nothing for no vectors or a model no preset declares)."""
    if not model_id:
        return FusionDefaults()
    from pcmem.embedding.presets import fusion_defaults  # the registry: the search names no preset

    return fusion_defaults(model_id)


def weighted_rrf_parameters(model_id: str | None) -> WeightedRrf:
    """The weighted-RRF parameters for vectors of this embedding model (``None``: no vectors, the shared value)."""
    return declared_defaults(model_id).weighted_rrf or WEIGHTED_RRF


def convex_alpha(model_id: str | None) -> float:
    """The convex weight for vectors of this embedding model (``None``: no vectors, the shared value)."""
    alpha = declared_defaults(model_id).convex_alpha
    return CONVEX_ALPHA if alpha is None else alpha


def normalise(scores: Sequence[float], how: Normalisation, floor: float = 0.0) -> list[float]:
    """Channel scores normalised over the channel's own admitted list: ``min-max`` (s - min) / (max - min);
    ``theoretical-min`` (s - floor) / (max - floor); ``z-score`` (s - mean) / standard deviation (not bounded: 0 is
    the list's mean). A list whose scores are all equal (one candidate, say) maps to 1: each of them is that
    channel's best."""
    if not scores:
        return []
    if how == "z-score":
        mean = sum(scores) / len(scores)
        spread = math.sqrt(sum((score - mean) ** 2 for score in scores) / len(scores))
        return [(score - mean) / spread for score in scores] if spread > 0 else [1.0] * len(scores)
    top = max(scores)
    low = min(scores) if how == "min-max" else floor
    if top <= low:
        return [1.0] * len(scores)
    return [(score - low) / (top - low) for score in scores]


def convex_fuse(channels: Mapping[str, Sequence[Candidate]], limit: int, *, alpha: float,
                normalisation: Normalisation = "min-max") -> list[Fused]:
    """score = alpha · norm(cosine) + (1 - alpha) · norm(BM25); a candidate a channel did not admit gets 0 from it
    (as its channel's lowest-scored candidate does under min-max). Ties bytewise by identity, as in RRF."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    weights = {"fts": 1.0 - alpha, "vector": alpha}
    return _fuse(channels, limit, lambda channel, found: [
        weights[channel] * value
        for value in normalise([c.score for c in found], normalisation, THEORETICAL_MIN[channel])])


def weighted_rrf_fuse(channels: Mapping[str, Sequence[Candidate]], limit: int, *, vector_weight: float,
                      k: int = RRF_K) -> list[Fused]:
    """score = Σ w_channel / (k + rank) with w_vector = ``vector_weight`` and w_fts = 1 - it (0.5 and k = 60: RRF's
    order)."""
    if not 0.0 <= vector_weight <= 1.0:
        raise ValueError(f"vector_weight must be between 0 and 1, got {vector_weight}")
    if k < 0:
        raise ValueError(f"k must be at least 0, got {k}")
    weights = {"fts": 1.0 - vector_weight, "vector": vector_weight}
    return _fuse(channels, limit, lambda channel, found: [
        weights[channel] / (k + rank) for rank in range(1, len(found) + 1)])


def choose_fusion(requested: SearchFusion | None, runtime: SearchFusion | None,
                  store_default: Callable[[], SearchFusion | None]) -> tuple[SearchFusion, FusionSource]:
    """The one place a search's fusion is decided, and why: the request's > the runtime's (``PCMEM_SEARCH_FUSION``)
    > the store's default (read only when it decides) > the contract's rrf."""
    if requested is not None:
        return requested, "request"
    if runtime is not None:
        return runtime, "runtime"
    stored = store_default()
    if stored is not None:
        return stored, "store"
    return "rrf", "contract"


def fusion_parameters(name: SearchFusion, model_id: str | None = None) -> dict[str, int | float | str]:
    """The parameters ``name`` runs with over ``model_id``'s vectors (shown on the search page next to its name)."""
    if name == "convex":
        return {"alpha": convex_alpha(model_id), "normalisation": CONVEX_NORMALISATION}
    if name == "weighted-rrf":
        weighted = weighted_rrf_parameters(model_id)
        return {"k": weighted.k, "vector_weight": weighted.vector_weight}
    return {"k": RRF_K}


def fuse(name: SearchFusion, channels: Mapping[str, Sequence[Candidate]], limit: int,
         model_id: str | None = None) -> list[Fused]:
    """The one place a fusion name becomes a function: ``rrf`` is the contract's."""
    if name == "convex":
        return convex_fuse(channels, limit, alpha=convex_alpha(model_id), normalisation=CONVEX_NORMALISATION)
    if name == "weighted-rrf":
        weighted = weighted_rrf_parameters(model_id)
        return weighted_rrf_fuse(channels, limit, vector_weight=weighted.vector_weight, k=weighted.k)
    return rrf_fuse(channels, limit)


def _fuse(channels: Mapping[str, Sequence[Candidate]], limit: int,
          contributions: Callable[[str, Sequence[Candidate]], list[float]]) -> list[Fused]:
    """Sum each channel's contribution per entry version (channels in CHANNELS order), best first, ties bytewise."""
    scores: dict[str, float] = {}
    matched: dict[str, dict[Channel, tuple[int, float]]] = {}
    by_version: dict[str, Candidate] = {}
    for channel in CHANNELS:
        found = channels.get(channel, ())
        for rank, (candidate, value) in enumerate(zip(found, contributions(channel, found), strict=True), 1):
            version_id = candidate.entry_version_id
            scores[version_id] = scores.get(version_id, 0.0) + value
            matched.setdefault(version_id, {})[channel] = (rank, candidate.score)
            by_version.setdefault(version_id, candidate)
    ordered = sorted(by_version.values(), key=lambda c: (-scores[c.entry_version_id], c.key))
    return [
        Fused(candidate=c, score=scores[c.entry_version_id], matched_by=tuple(matched[c.entry_version_id]),
              channels=matched[c.entry_version_id])
        for c in ordered[:limit]
    ]
