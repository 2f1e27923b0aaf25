"""The fail-open envelope — the one place a decision failure becomes ``abstain`` — and role resolution."""

from __future__ import annotations

import logging

from pcmem.decision.port import DecisionModel
from pcmem.types.decision import DecisionFailurePolicy, DecisionOutcome, DecisionRequest, DecisionResult

log = logging.getLogger(__name__)

#: Failure policy of each consumer role. Rerank must never pass a failure off as a keep.
ROLE_POLICIES: dict[str, DecisionFailurePolicy] = {
    "memory.rerank": DecisionFailurePolicy.FAIL_CLOSED,
    "memory.write-gate": DecisionFailurePolicy.FAIL_OPEN,
}


class FailOpenDecisionModel:
    """Wraps a backend for advisory roles: any non-cancellation exception → ``abstain`` with ``used_fallback``.

    ``BaseException`` subclasses that are not ``Exception`` (asyncio/anyio cancellation, KeyboardInterrupt,
    SystemExit) propagate untouched.
    """

    def __init__(self, inner: DecisionModel) -> None:
        self.inner = inner

    @property
    def policy_id(self) -> str:
        return self.inner.policy_id

    def evaluate(self, request: DecisionRequest) -> DecisionResult:
        try:
            return self.inner.evaluate(request)
        except Exception as error:  # the single fail-open point; candidate text is deliberately not logged
            log.warning("decision backend %s failed for %s (%s); abstaining",
                        self.inner.policy_id, request.decision_kind, type(error).__name__)
            return DecisionResult(outcome=DecisionOutcome.ABSTAIN, policy_id=self.inner.policy_id, used_fallback=True,
                                  rationale=f"backend failure: {type(error).__name__}")


def for_role(backend: DecisionModel, role: str) -> DecisionModel:
    """The handle a consumer role gets: wrapped for fail-open roles, the backend itself for fail-closed ones.

    One backend instance can serve several roles at once.
    """
    policy = ROLE_POLICIES.get(role, DecisionFailurePolicy.FAIL_OPEN)  # fail-open stays the default
    return backend if policy is DecisionFailurePolicy.FAIL_CLOSED else FailOpenDecisionModel(backend)
