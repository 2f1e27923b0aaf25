"""Search request and response models (SPEC §2)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from pcmem import validation
from pcmem.memory.models import Citation, MemoryRef, _Frozen, _Request

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


class SearchPage(_Frozen):
    """The memory searched (``None`` when the scope is empty), the mode that actually ran, and the hits."""

    memory: MemoryRef | None
    mode: ResolvedMode
    hits: tuple[MemoryHit, ...]
    rerank: None = None  # the in-process rerank trace; filled once a reranker is configured
