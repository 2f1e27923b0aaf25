"""``memory.write-gate``: an advisory check before ``remember`` that an entry is not already stated (a decision-model
role).

For each new entry the gate searches the scope for its nearest existing entries and asks the decision model whether
one of them already states it. "yes" reports the entry as a duplicate of that citation instead of adding it (unless
the request allows duplicates). The gate is fail-open: its handle is wrapped in the envelope, so a backend failure
(an abstain with ``used_fallback``) never blocks a write. Off unless a decision model is injected.
"""

from __future__ import annotations

from collections.abc import Callable

from pcmem.decision.envelope import for_role
from pcmem.decision.port import DecisionModel
from pcmem.types.decision import DecisionOutcome, DecisionRequest
from pcmem.types.memory import Citation, Duplicate, RememberRequest
from pcmem.types.search import SearchMemoryRequest, SearchPage

ROLE = "memory.write-gate"
QUESTION = "Does the entry already state everything the new note says?"
NEIGHBOURS = 3


class WriteGate:
    def __init__(self, decision_model: DecisionModel, neighbours: int = NEIGHBOURS) -> None:
        self.decision_model = for_role(decision_model, ROLE)
        self.neighbours = neighbours

    def duplicate_of(self, text: str, search: Callable[[SearchMemoryRequest], SearchPage]) -> Citation | None:
        """The citation of an existing entry that already states ``text``, or ``None``."""
        page = search(SearchMemoryRequest(query=text, limit=self.neighbours))
        for hit in page.hits:
            result = self.decision_model.evaluate(
                DecisionRequest(decision_kind=ROLE, question=QUESTION, subject=hit.text, evidence=(text,))
            )
            if result.outcome is DecisionOutcome.YES and not result.used_fallback:
                return hit.citation
        return None

    def duplicates(self, request: RememberRequest,
                   search: Callable[[SearchMemoryRequest], SearchPage]) -> tuple[Duplicate, ...]:
        """The entries of ``request`` that an existing entry already states, by their index (none when the request
        allows duplicates; an upsert by key is decided by its key). ``search``: the scope's coarse search — the
        store's own, or a client's through its owner (:mod:`pcmem.owner.in_client`)."""
        if request.allow_duplicates:
            return ()
        found = []
        for index, entry in enumerate(request.entries):
            if request.upsert and entry.entry_id is not None:
                continue  # an upsert by key: the key decides what is the same entry
            existing = self.duplicate_of(entry.text, search)
            if existing is not None:
                found.append(Duplicate(index=index, text=entry.text, existing=existing))
        return tuple(found)
