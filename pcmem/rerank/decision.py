"""The decision reranker: one yes/no/abstain decision per coarse candidate, in coarse order."""

from __future__ import annotations

from collections.abc import Sequence

from pcmem.decision.port import DecisionModel
from pcmem.errors import InputError, RerankError
from pcmem.rerank.port import fallback_ranks
from pcmem.types.decision import DecisionOutcome, DecisionRequest
from pcmem.types.progress import Progress
from pcmem.types.rerank import CandidateDecision, MemoryRerankDecision
from pcmem.types.search import MemoryHit
from pcmem.types.usage import Usage

POLICY_ID = "powercontext.memory.rerank.decision.v1"
FILL_POLICY_ID = "powercontext.memory.rerank.decision.fill-to-limit.v1"
QUESTION = "Does this entry contain evidence that answers the query?"
KEEP = frozenset({DecisionOutcome.YES, DecisionOutcome.ABSTAIN})  # a healthy abstain keeps evidence (recall)


class DecisionReranker:
    """Keep yes or healthy abstain, stop at ``limit``, keep coarse order.

    A result with ``used_fallback`` means the backend failed: the rerank fails closed. When nothing is kept the
    built-in fallback (coarse 1..min(limit, n)) applies. ``fill_to_limit`` (opt-in, its own policy id) appends the
    unselected coarse ranks in coarse order up to ``limit`` after the kept ones.
    """

    def __init__(self, decision_model: DecisionModel, *, fill_to_limit: bool = False) -> None:
        self.decision_model = decision_model
        self.fill_to_limit = fill_to_limit
        self.policy_id = FILL_POLICY_ID if fill_to_limit else POLICY_ID

    def rerank(
        self,
        query: str,
        candidates: Sequence[MemoryHit],
        limit: int,
        progress: Progress | None = None,
    ) -> MemoryRerankDecision:
        if limit < 1:
            raise InputError(f"rerank limit must be at least 1, got {limit}")
        limit = min(limit, len(candidates))
        kept: list[int] = []
        decisions: list[CandidateDecision] = []
        usages: list[Usage] = []
        calls = 0
        for rank, candidate in enumerate(candidates, start=1):
            result = self.decision_model.evaluate(
                DecisionRequest(decision_kind="memory.rerank", question=QUESTION, subject=candidate.text,
                                evidence=(query,))
            )
            calls += 1
            usages.append(result.usage)
            if progress:
                progress(rank, len(candidates))
            if result.used_fallback:
                raise RerankError(
                    f"decision backend {self.decision_model.policy_id} degraded on candidate {rank}; "
                    "the rerank fails closed"
                )
            decisions.append(CandidateDecision(rank=rank, outcome=result.outcome.value,
                                               yes_probability=result.yes_probability))
            if result.outcome in KEEP:
                kept.append(rank)
            if len(kept) == limit:
                break
        usage = Usage.total(usages)
        if not kept:
            return MemoryRerankDecision(selected_ranks=fallback_ranks(len(candidates), limit), usage=usage,
                                        used_fallback=True, decision_calls=calls, decisions=tuple(decisions))
        selected = tuple(kept)
        if self.fill_to_limit:
            chosen = set(kept)
            rest = [rank for rank in range(1, len(candidates) + 1) if rank not in chosen]
            selected += tuple(rest[: limit - len(kept)])
        return MemoryRerankDecision(selected_ranks=selected, usage=usage, decision_calls=calls,
                                    decisions=tuple(decisions))
