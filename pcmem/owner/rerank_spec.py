"""What a client sends to name a reranker (a pydantic model, so apart from :mod:`pcmem.owner.protocol`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict

from pcmem import rerank_policies


def _declared(policy: str) -> str:
    """A declared policy's name (pydantic reports an unknown one as a validation error naming the known ones)."""
    return rerank_policies.named(policy).name


class RerankSpec(BaseModel):
    """Which reranker a client wants for a search, by name: the owner builds (and keeps) it; a client never loads a
    model for work the owner does. Mirrors :func:`pcmem.compose.rerankers.build_reranker`'s arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    policy: Annotated[str, AfterValidator(_declared)]
    #: The client's :class:`~pcmem.config.InferenceConfig` as JSON (its generation model, timeouts, ...).
    inference: dict[str, Any] = {}
    rerank_embedder: str | None = None
