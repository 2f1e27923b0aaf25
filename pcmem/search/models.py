"""Search request and response models (SPEC §2)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from pcmem import validation
from pcmem.memory.models import Citation, MemoryRef, _Frozen, _Request
from pcmem.usage import Usage

SearchMode = Literal["auto", "fts", "vector", "hybrid"]
ResolvedMode = Literal["fts", "vector", "hybrid"]
Channel = Literal["fts", "vector"]

MAX_SEARCH_LIMIT = 50


class SearchMemoryRequest(_Request):
    """``query`` (1..8192 UTF-8 bytes after NFC + strip), ``limit`` 1..50 (default 10), ``mode`` (default auto)."""

    query: str
    limit: int = Field(default=10, ge=1, le=MAX_SEARCH_LIMIT)
    mode: SearchMode = "auto"

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: object) -> str:
        return validation.normalize_text(value, "query")


class MemoryHit(_Frozen):
    """One result: the exact citation of the revision it was read from, its text, and how it was found."""

    citation: Citation
    text: str
    kind: str
    score: float  # the RRF sum: Σ 1/(60 + rank) over the channels that admitted it
    matched_by: tuple[Channel, ...]
    metadata: dict[str, Any] = Field(default_factory=dict)


class RerankTrace(_Frozen):
    """What a rerank did, in-process only: the exact coarse pool, the ranks chosen (in the model's order), why."""

    policy_id: str
    candidates: tuple[MemoryHit, ...]
    selected_ranks: tuple[int, ...]
    discarded_rank_count: int
    used_fallback: bool
    latency_ms: float
    usage: Usage
    decision_calls: int | None = None

    @property
    def dropped_ranks(self) -> tuple[int, ...]:
        """Coarse ranks the reranker did not select."""
        chosen = set(self.selected_ranks)
        return tuple(rank for rank in range(1, len(self.candidates) + 1) if rank not in chosen)


class SearchPage(_Frozen):
    """The memory searched (``None`` when the scope is empty), the mode that actually ran, the hits, and the rerank
    trace when a reranker ran."""

    memory: MemoryRef | None
    mode: ResolvedMode
    hits: tuple[MemoryHit, ...]
    rerank: RerankTrace | None = None
