"""Decision-model values (PowerContext's decision-model contract): one yes/no/abstain judgement, its request and its
failure policies."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from pcmem.types.usage import Usage


class DecisionOutcome(str, Enum):
    YES = "yes"
    NO = "no"
    ABSTAIN = "abstain"


class DecisionFailurePolicy(str, Enum):
    """Declared by the consumer role, resolved at composition."""

    FAIL_OPEN = "fail_open"  # advisory roles: a backend failure becomes abstain + used_fallback
    FAIL_CLOSED = "fail_closed"  # the rerank role: a backend failure raises


class DecisionRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    decision_kind: str  # a low-cardinality consumer label, e.g. "memory.rerank"
    question: str
    subject: str
    evidence: tuple[str, ...] = ()


class DecisionResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    outcome: DecisionOutcome
    policy_id: str
    usage: Usage = Field(default_factory=Usage)
    rationale: str | None = None
    confidence: float | None = None
    #: The probability the model put on "yes" among the three answers, when the backend reads it (llama.cpp does).
    yes_probability: float | None = None
    #: The backend failed and this result is the envelope's stand-in, not a verdict.
    used_fallback: bool = False
