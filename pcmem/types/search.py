"""Search request and response models (SPEC §2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from pcmem import validation
from pcmem.types.base import Frozen, Request
from pcmem.types.memory import Citation, MemoryRef
from pcmem.types.usage import Usage

SearchMode = Literal["auto", "fts", "vector", "hybrid"]
ResolvedMode = Literal["fts", "vector", "hybrid"]
Channel = Literal["fts", "vector"]
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)

MAX_SEARCH_LIMIT = 50


@dataclass(frozen=True, slots=True)
class Candidate:
    """One channel's candidate: identity plus the channel's evidence (BM25 score or cosine similarity)."""

    artifact_id: str
    entry_id: str
    entry_version_id: str
    score: float
    matched_terms: int = 0  # distinct query terms the document contains (FTS only)

    @property
    def key(self) -> tuple[bytes, bytes, bytes]:
        """The bytewise tie-break order: artifact_id, then entry_id, then entry_version_id."""
        return (self.artifact_id.encode(), self.entry_id.encode(), self.entry_version_id.encode())


class SearchMemoryRequest(Request):
    """``query`` (1..8192 UTF-8 bytes after NFC + strip), ``limit`` 1..50 (default 10), ``mode`` (default auto)."""

    query: str
    limit: int = Field(default=10, ge=1, le=MAX_SEARCH_LIMIT)
    mode: SearchMode = "auto"

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: object) -> str:
        return validation.normalize_text(value, "query")


class MemoryHit(Frozen):
    """One result: the exact citation of the revision it was read from, its text, and how it was found."""

    citation: Citation
    text: str
    kind: str
    score: float  # the RRF sum: Σ 1/(60 + rank) over the channels that admitted it
    matched_by: tuple[Channel, ...]
    metadata: dict[str, Any] = Field(default_factory=dict)


class RerankTrace(Frozen):
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


class SearchPage(Frozen):
    """The memory searched (``None`` when the scope is empty), the mode that actually ran, the hits, and the rerank
    trace when a reranker ran."""

    memory: MemoryRef | None
    mode: ResolvedMode
    hits: tuple[MemoryHit, ...]
    rerank: RerankTrace | None = None
