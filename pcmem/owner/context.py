"""A client's own settings, sent with each of its requests, so the owner runs the call as the client's runtime would.

A client opened with ``RuntimeConfig(memory_search_fusion=...)`` (or ``$PCMEM_SEARCH_FUSION``), a candidate limit,
``embedder=None`` (full text only), a preset, or ``clock=`` must get what it asked for, not the owner's settings.
Each request carries them as ``"context"``; the owner keeps one Memory service per distinct set
(:class:`pcmem.compose.owned.ServedSettings`). A custom clock's reading travels with each write as ``"now"``.

What cannot cross — an object of the client's process — runs in the client (its reranker, its write gate:
:mod:`pcmem.owner.in_client`) or is refused when the store is opened (:mod:`pcmem.compose.runtime`).
Standard library only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

from pcmem.errors import InputError


@dataclass(frozen=True)
class CallerSettings:
    """The settings of the client's runtime that decide what a call does (defaults: a runtime opened plainly)."""

    #: ``RuntimeConfig.memory_search_fusion``: the fusion of a search that names none (``None``: the store's default).
    fusion: str | None = None
    #: ``RuntimeConfig.memory_rerank_candidate_limit`` (``None``: the owner's, which is the default too).
    candidate_limit: int | None = None
    #: ``"auto"`` (the store's own embedder), ``None`` (full text only), or a preset name or model directory. A
    #: store with no vectors yet stays so: a client never chooses a store's vector space (its owner, or ``pcmem
    #: reindex --embedder``, does).
    embedder: str | None = "auto"
    #: The embedding reranker's second embedder: ``"auto"`` (the store's secondary profile), ``"none"``, a name.
    rerank_embedder: str = "auto"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: object) -> CallerSettings:
        """The settings a request carries (none: the defaults). Raises InputError for a malformed set."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InputError("a request's context must be an object")
        known = {field.name for field in fields(cls)}
        values = {name: value for name, value in raw.items() if name in known}
        for name, value in values.items():
            wanted = int if name == "candidate_limit" else str
            if value is not None and not isinstance(value, wanted):
                raise InputError(f"a request's context has {name} = {value!r}")
        if values.get("rerank_embedder", "auto") is None:
            raise InputError("a request's context has rerank_embedder = None")
        return cls(**values)


def call_time(raw: object) -> datetime | None:
    """The client clock's reading a write carries (``None``: the owner's clock). Raises InputError."""
    if raw is None:
        return None
    try:
        return datetime.fromisoformat(str(raw))  # as the client's clock gave it (with its zone, or without)
    except ValueError:
        raise InputError(f"a request's time {raw!r} is not an ISO 8601 time") from None
