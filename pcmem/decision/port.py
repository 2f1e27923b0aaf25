"""The ``DecisionModel`` port: one narrow yes/no/abstain judgement per request."""

from __future__ import annotations

from typing import Protocol

from pcmem.types.decision import DecisionRequest, DecisionResult


class DecisionModel(Protocol):
    """Evaluates one request. Raises on backend failure unless wrapped in the fail-open envelope."""

    @property
    def policy_id(self) -> str: ...

    def evaluate(self, request: DecisionRequest) -> DecisionResult: ...
