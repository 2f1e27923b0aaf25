"""What a client sends to name a reranker (a pydantic model, so apart from :mod:`pcmem.owner.protocol`), and the named
reranker a client passes as ``search(reranker=...)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from pcmem import rerank_policies
from pcmem.errors import ConfigurationError

if TYPE_CHECKING:
    from pcmem.types.progress import Progress
    from pcmem.types.rerank import MemoryRerankDecision
    from pcmem.types.search import MemoryHit

#: Not a policy: the client reranks with an object of its own, and asks the owner for the coarse pool
#: (:class:`pcmem.compose.owned.CandidatePool`, :mod:`pcmem.owner.in_client`).
CANDIDATES: Literal["candidates"] = "candidates"


def _declared(policy: str) -> str:
    """A declared policy's name, or :data:`CANDIDATES` (pydantic reports another name as a validation error naming
    the known policies)."""
    return policy if policy == CANDIDATES else rerank_policies.named(policy).name


class RerankSpec(BaseModel):
    """Which reranker a client wants for a search, by name: the owner builds (and keeps) it; a client never loads a
    model for work the owner does. Mirrors :func:`pcmem.compose.rerankers.build_reranker`'s arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    policy: Annotated[str, AfterValidator(_declared)]
    #: The client's :class:`~pcmem.config.InferenceConfig` as JSON (its generation model, timeouts, ...).
    inference: dict[str, Any] = {}
    rerank_embedder: str | None = None


class RerankChoice:
    """A reranker named, not built: what a client passes as ``search(reranker=...)``; the owner builds and runs it
    (:meth:`pcmem.SyncRuntime.build_reranker` returns one in a client)."""

    def __init__(self, spec: RerankSpec) -> None:
        self.spec = spec

    @property
    def policy_id(self) -> str:
        return self.spec.policy

    def rerank(self, query: str, candidates: Sequence[MemoryHit], limit: int,
               progress: Progress | None = None) -> MemoryRerankDecision:
        """Never runs here: the search that names it runs in the process that owns the store."""
        raise ConfigurationError(f"the {self.spec.policy} reranker of a client runs in the process that owns the "
                                 "store; pass it to a client's search")
