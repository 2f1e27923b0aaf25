"""Search request and response models."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from pcmem import validation
from pcmem.errors import InputError
from pcmem.settings import FusionSource, SearchFusion
from pcmem.types.base import Count, Frozen, Request, Timestamp
from pcmem.types.memory import Citation, EntryVersion, MemoryRef
from pcmem.types.rerank import CandidateDecision
from pcmem.types.usage import Usage

# the modes and bounds are defined in pcmem.vocabulary (the CLI reads them without pydantic); here for every caller
from pcmem.vocabulary import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, SearchMode
from pcmem.vocabulary import SEARCH_MODES as SEARCH_MODES

ResolvedMode = Literal["fts", "vector", "hybrid"]
Channel = Literal["fts", "vector"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One channel's candidate: identity plus the channel's evidence (BM25 score or cosine similarity)."""

    artifact_id: str
    entry_id: str
    entry_version_id: str
    score: float
    matched_terms: int = 0  # distinct query terms the document contains (FTS only)

    @property
    def key(self) -> tuple[str, str, str]:
        """The bytewise tie-break order: artifact_id, then entry_id, then entry_version_id. Python orders strings by
        code point, which is the order of their UTF-8 bytes, so the strings themselves sort bytewise (encoding
        every candidate's ids cost a search ~80 encodes)."""
        return (self.artifact_id, self.entry_id, self.entry_version_id)


class SearchMemoryRequest(Request):
    """``query`` (1..8192 UTF-8 bytes after NFC + strip), ``limit`` 1..50 (default 10), ``mode`` (default auto).

    Optional filters, applied to every channel's candidates *before* channel truncation, admission and RRF (so a
    filter never shrinks the result because candidates were cut first): ``kinds`` (the entry's kind is one of
    them), ``metadata`` (each given top-level key is present with exactly this value, compared as canonical JSON:
    ``1`` does not match ``true`` or ``1.0``), ``created_from`` (inclusive) / ``created_before`` (exclusive) on the
    entry version's ``created_at`` (naive datetimes are UTC).

    ``fusion`` (non-contract): how the channels are fused — ``rrf`` (the contract's equal-weight RRF), ``convex``
    (normalised cosine and BM25, weighted) or ``weighted-rrf`` (RRF with a weight per channel and a small k);
    ``None`` (default): the runtime's default (``RuntimeConfig.memory_search_fusion``), else the store's (``pcmem
    fusion set``), else ``rrf``.
    """

    query: str
    limit: Count = Field(default=DEFAULT_SEARCH_LIMIT, ge=1, le=MAX_SEARCH_LIMIT)
    mode: SearchMode = "auto"
    kinds: tuple[str, ...] | None = None
    metadata: dict[str, Any] | None = None
    created_from: Timestamp | None = None
    created_before: Timestamp | None = None
    fusion: SearchFusion | None = None

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: object) -> str:
        return validation.normalize_text(value, "query")

    @field_validator("kinds", mode="before")
    @classmethod
    def _kinds(cls, value: object) -> tuple[str, ...] | None:
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
            raise InputError("kinds takes a list of kinds, e.g. kinds=['fact']")
        kinds = tuple(sorted({validation.validate_kind(kind) for kind in value}))
        if not kinds:
            raise InputError("kinds must name at least one kind (leave it out to search every kind)")
        return kinds

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, value: object) -> dict[str, Any] | None:
        return None if value is None else validation.validate_metadata(value)

    @field_validator("created_from", "created_before", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _range(self) -> SearchMemoryRequest:
        if self.created_from and self.created_before and self.created_from >= self.created_before:
            raise InputError("created_from must be before created_before")
        return self

    @property
    def filtered(self) -> bool:
        """Whether any filter is set."""
        return bool(self.kinds or self.metadata or self.created_from or self.created_before)

    def admits(self, version: EntryVersion) -> bool:
        """Whether an entry version passes every filter of this request."""
        if self.kinds is not None and version.kind not in self.kinds:
            return False
        if self.created_from is not None and version.created_at < self.created_from:
            return False
        if self.created_before is not None and version.created_at >= self.created_before:
            return False
        for key, wanted in (self.metadata or {}).items():
            if key not in version.metadata or (validation.canonical_json(version.metadata[key])
                                               != validation.canonical_json(wanted)):
                return False
        return True


class MemoryHit(Frozen):
    """One result: the exact citation of the revision it was read from, its text, and how it was found."""

    citation: Citation
    text: str
    kind: str
    score: float  # the fused score: with rrf (the default) Σ 1/(60 + rank) over the channels that admitted it
    matched_by: tuple[Channel, ...]
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: Non-contract, for showing why a hit is where it is (the TUI): each channel that admitted it, with its rank
    #: there (1 = that channel's best) and that channel's own measure (BM25 for fts, cosine for vector). Left out of
    #: a dump when empty (a hit made by hand, a reranker's own).
    channels: dict[Channel, tuple[int, float]] = Field(default_factory=dict, exclude_if=lambda value: not value)
    #: The entry version's number (what a compare-and-swap on the entry expects) and when it was written. Every search
    #: fills both from the version it read, so showing or revising a hit needs no read of its own (an agent host that
    #: is a client of the store's owner used to ask the owner once per hit); ``None`` only in a hit made by hand.
    version: int | None = None
    created_at: datetime | None = None


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
    #: Per-candidate policies: the model's verdict on each candidate it judged, in coarse order.
    decisions: tuple[CandidateDecision, ...] = ()
    #: The embedding policy: the embedder whose cosine ordered the pool (its profile, described).
    embedder: str | None = None
    #: The embedding policy: each candidate's cosine to the query under that embedder, in coarse order.
    cosines: tuple[float, ...] = ()

    @property
    def dropped_ranks(self) -> tuple[int, ...]:
        """Coarse ranks the reranker did not select."""
        chosen = set(self.selected_ranks)
        return tuple(rank for rank in range(1, len(self.candidates) + 1) if rank not in chosen)


class FusionDefault(Frozen):
    """The fusion a search that does not choose one runs (``fusion``) and why (``source``: the runtime's
    ``PCMEM_SEARCH_FUSION``, the store's default, else the contract's rrf); ``store_default`` is the store's own
    (``None``: it keeps none), which the runtime's overrides."""

    fusion: SearchFusion
    source: FusionSource
    store_default: SearchFusion | None


class WarmReport(Frozen):
    """What ``runtime.warm`` loaded: the embedding model (``model``: its id; ``None`` when searches run full text
    only), the scopes whose search views are loaded, the named scopes that hold no memory yet (nothing to load), and
    whether a cancel stopped it before the end."""

    model: str | None = None
    scopes: tuple[str, ...] = ()
    empty_scopes: tuple[str, ...] = ()
    cancelled: bool = False


class SearchPage(Frozen):
    """The memory searched (``None`` when the scope is empty, and for a search over several scopes: see
    ``memories``), the mode that actually ran, the hits, and the rerank trace when a reranker ran."""

    memory: MemoryRef | None
    mode: ResolvedMode
    hits: tuple[MemoryHit, ...]
    rerank: RerankTrace | None = None
    #: Every scope searched that has a memory, at the revision read (one entry for a single-scope search).
    memories: tuple[MemoryRef, ...] = ()
    #: The fusion that ordered the coarse hits (``rrf``: the contract's), where that choice came from (the request,
    #: the runtime's ``PCMEM_SEARCH_FUSION``, the store's default, else the contract) and the parameters it ran with.
    fusion: SearchFusion = "rrf"
    fusion_source: FusionSource = "contract"
    fusion_parameters: dict[str, int | float | str] = Field(default_factory=dict)
