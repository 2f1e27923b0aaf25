"""A memo of decisions for benchmarks: one deterministic backend's verdicts, reused across policies of one run.

A llama.cpp decision is one forward pass at temperature 0, so the same (model, request) always gives the same
verdict: the ``decision`` and ``decision-fill`` policies of one benchmark run can share the computation honestly.
The memo charges every lookup with what its *first* computation cost, so a policy served from the memo still reports
the calls and latency it would have spent alone.
"""

from __future__ import annotations

import threading
import time

from pcmem.decision.port import DecisionModel
from pcmem.types.decision import DecisionRequest, DecisionResult


class MemoDecisionModel:
    """Wraps a deterministic backend; results are kept by (backend, model, request). Failures are not kept."""

    def __init__(self, inner: DecisionModel, model_id: str = "") -> None:
        self.inner = inner
        self.model_id = model_id
        self._results: dict[tuple[str, ...], tuple[DecisionResult, float]] = {}
        self._lock = threading.Lock()
        #: Since the last :meth:`take_counters`: lookups answered from the memo, and what their first computation
        #: took (the time the memo saved).
        self.hits = 0
        self.saved_ms = 0.0

    @property
    def policy_id(self) -> str:
        return self.inner.policy_id

    def _key(self, request: DecisionRequest) -> tuple[str, ...]:
        return (self.inner.policy_id, self.model_id, request.decision_kind, request.question, request.subject,
                *request.evidence)

    def evaluate(self, request: DecisionRequest) -> DecisionResult:
        key = self._key(request)
        with self._lock:
            known = self._results.get(key)
        if known is not None:
            result, spent_ms = known
            with self._lock:
                self.hits += 1
                self.saved_ms += spent_ms
            return result
        started = time.perf_counter()
        result = self.inner.evaluate(request)
        spent_ms = (time.perf_counter() - started) * 1000
        with self._lock:
            if not result.used_fallback:
                self._results[key] = (result, spent_ms)
        return result

    def take_counters(self) -> tuple[int, float]:
        """(memo hits, ms their first computation took) since the previous call; resets both."""
        with self._lock:
            counters = (self.hits, self.saved_ms)
            self.hits, self.saved_ms = 0, 0.0
        return counters
