"""Rerank values (PowerContext's rerank seam): the policy names and what a reranker decided."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# the policies are declared in pcmem.rerank_policies (the CLI reads them without pydantic); here for every caller
from pcmem.rerank_policies import MODEL_RERANK_POLICIES as MODEL_RERANK_POLICIES
from pcmem.rerank_policies import RERANK_POLICIES as RERANK_POLICIES
from pcmem.rerank_policies import RerankPolicy as RerankPolicy
from pcmem.types.usage import Usage


class CandidateDecision(BaseModel):
    """One per-candidate verdict of a decision rerank: the coarse ``rank``, the model's ``outcome``
    (``yes``/``no``/``abstain``) and, when the model gives it, the probability it put on "yes" (among the three)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    rank: int
    outcome: Literal["yes", "no", "abstain"]
    yes_probability: float | None = None


class MemoryRerankDecision(BaseModel):
    """What a reranker chose: 1-based positions into the candidates it was given, in its preferred order."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    selected_ranks: tuple[int, ...]
    usage: Usage = Field(default_factory=Usage)
    #: Ranks the model emitted that were duplicates or out of range (listwise only; 0 for per-candidate policies).
    discarded_rank_count: int = 0
    #: The built-in fallback to coarse ranks 1..k was used because no valid rank remained.
    used_fallback: bool = False
    #: Per-candidate policies: how many model decisions were actually made.
    decision_calls: int | None = None
    #: Per-candidate policies: every decision made, in coarse order (candidates after the stop have none).
    decisions: tuple[CandidateDecision, ...] = ()
    #: The embedding policy: each candidate's cosine to the query, in coarse order (what it sorted by; the
    #: selection itself is still ``selected_ranks``).
    cosines: tuple[float, ...] = ()
    #: The embedding policy: the embedder whose cosine ordered the pool (its profile, described).
    embedder: str | None = None
