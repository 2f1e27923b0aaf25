"""Context blocks and recent entries: what an agent puts in its prompt at the start of a turn or a session.

A :class:`ContextBlock` is prompt-ready text under a budget — the entries relevant to a query and the newest ones,
each once, each with a citation — plus, when asked (``explain``), what was left out and why. The packing rules are in
:mod:`pcmem.memory.context_block`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pcmem import validation
from pcmem.errors import InputError
from pcmem.types.base import Count, Flag, Frozen, Request, Timestamp
from pcmem.types.memory import Citation, MemoryEntry, MemoryRef
from pcmem.vocabulary import SearchMode

#: How a token budget is counted: one token per 3 UTF-8 bytes, rounded up. English prose runs ~4 bytes a token in the
#: common BPE tokenizers, ids and punctuation ~2-3, a CJK character is 3 bytes and ~1-2 tokens: 3 errs on the side
#: of fewer entries, never of a block over the budget for typical text.
BYTES_PER_TOKEN = 3
MIN_CONTEXT_BYTES = 256
MAX_CONTEXT_BYTES = 65536
DEFAULT_CONTEXT_BYTES = 8000  # PowerContext 1.4.1's prepare_context default
DEFAULT_RELEVANT = 6  # PowerContext 1.4.1's default memory section limit
DEFAULT_RECENT = 4
MAX_CONTEXT_ENTRIES = 50
DEFAULT_RECENT_LIMIT = 20
MAX_RECENT_LIMIT = 100

Source = Literal["relevant", "recent"]


def estimate_tokens(text: str) -> int:
    """The tokens a budget counts for ``text``: ⌈UTF-8 bytes / :data:`BYTES_PER_TOKEN`⌉."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


class RecentRequest(Request):
    """The newest active entries: at most ``limit`` (1..100, default 20), optionally only those written at or after
    ``since`` (naive datetimes are UTC)."""

    limit: Count = Field(default=DEFAULT_RECENT_LIMIT, ge=1, le=MAX_RECENT_LIMIT)
    since: Timestamp | None = None

    @field_validator("since", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else (value.replace(tzinfo=UTC) if value.tzinfo is None else value)


class RecentEntry(Frozen):
    """An active entry and when it was last written (remembered, revised or reactivated: ``written_at`` is that
    revision's time, ``entry.entry.created_at`` the version's)."""

    scope: str
    written_at: datetime
    entry: MemoryEntry


class RecentPage(Frozen):
    """Newest first (ties: scope, then entry id); ``memories``: every scope read that has a memory, at its head."""

    entries: tuple[RecentEntry, ...]
    memories: tuple[MemoryRef, ...] = ()


class ContextRequest(Request):
    """What a context block holds and how big it may be.

    ``query`` (optional): up to ``relevant`` (0..50, default 6) search hits for it come first, in rank order; then up
    to ``recent`` (0..50, default 4) of the newest active entries. ``max_bytes`` (256..65536, default 8000) bounds the
    block's UTF-8 bytes, ``max_tokens`` (optional, 64..21845) its tokens as :func:`estimate_tokens` counts them; the
    tighter one applies. ``kinds`` and ``mode`` go to the search. ``explain`` lists what was left out, and why.
    """

    query: str | None = None
    max_bytes: Count = Field(default=DEFAULT_CONTEXT_BYTES, ge=MIN_CONTEXT_BYTES, le=MAX_CONTEXT_BYTES)
    max_tokens: Count | None = Field(default=None, ge=64, le=MAX_CONTEXT_BYTES // BYTES_PER_TOKEN)
    relevant: Count = Field(default=DEFAULT_RELEVANT, ge=0, le=MAX_CONTEXT_ENTRIES)
    recent: Count = Field(default=DEFAULT_RECENT, ge=0, le=MAX_CONTEXT_ENTRIES)
    kinds: tuple[str, ...] | None = None
    mode: SearchMode = "auto"
    explain: Flag = False

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: object) -> str | None:
        return None if value is None else validation.normalize_text(value, "query")

    @field_validator("kinds", mode="before")
    @classmethod
    def _kinds(cls, value: object) -> tuple[str, ...] | None:
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise InputError("kinds takes a list of kinds, e.g. kinds=['fact']")
        if not value:
            raise InputError("kinds must name at least one kind (leave it out for every kind)")
        return tuple(sorted({validation.validate_kind(kind) for kind in value}))

    @model_validator(mode="after")
    def _something_to_pack(self) -> ContextRequest:
        if (self.query is None or self.relevant == 0) and self.recent == 0:
            raise InputError("a context block needs a query (with relevant ≥ 1) or recent ≥ 1")
        return self

    @property
    def budget_bytes(self) -> int:
        """The byte budget the tighter of ``max_bytes`` and ``max_tokens`` sets."""
        if self.max_tokens is None:
            return self.max_bytes
        return min(self.max_bytes, self.max_tokens * BYTES_PER_TOKEN)


class ContextItem(Frozen):
    """One entry in the block: ``[number]`` in the text, its exact citation, and whether its text was cut."""

    number: int
    scope: str
    citation: Citation
    kind: str
    version: int
    source: Source
    truncated: bool = False


class ContextOmission(Frozen):
    """A candidate left out: ``duplicate`` (the same entry, or the same text, came earlier: ``duplicate_of`` is that
    item's number when it was included) or ``budget`` (it did not fit; ``bytes`` is what its line would have cost)."""

    scope: str
    citation: Citation
    source: Source
    reason: Literal["duplicate", "budget"]
    duplicate_of: int | None = None
    bytes: int = 0


class ContextBlock(Frozen):
    """Prompt-ready memory: ``text`` ("" when nothing fits or nothing is there) is at most the request's budget in
    ``bytes`` and estimated ``tokens``; ``items`` cite each entry in it; ``omitted`` (only with ``explain``) says what
    was left out. ``mode`` is the search mode that ran (``None`` without a query); ``memories`` the heads read."""

    text: str
    bytes: int
    tokens: int
    items: tuple[ContextItem, ...]
    omitted: tuple[ContextOmission, ...] = ()
    mode: str | None = None
    memories: tuple[MemoryRef, ...] = ()
