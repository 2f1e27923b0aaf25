"""Context blocks and recent entries: what an agent puts in its prompt at the start of a turn or a session.

A :class:`ContextBlock` is prompt-ready text under a budget — the entries relevant to a query and the newest ones,
each once, each with a citation — plus, when asked (``explain``), what was left out and why. The packing rules are in
:mod:`pcmem.memory.context_block`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pcmem import validation
from pcmem.errors import InputError
from pcmem.types.base import Count, Flag, Frozen, Request, Timestamp
from pcmem.types.memory import Citation, MemoryEntry, MemoryRef
from pcmem.vocabulary import SearchMode

#: How a token budget is counted (:func:`estimate_tokens`): a run of ASCII letters is a token per 4 letters, rounded
#: up; any other character but whitespace (a digit, punctuation, a CJK character, an accented letter) is one token.
#: Made to count at least what subword tokenizers count: on LoCoMo dialogue, context blocks (whose generated entry
#: ids tokenize poorly), pcmem's documentation and CJK text it gave 1.00-1.34x what the MiniLM WordPiece tokenizer counts,
#: where UTF-8 bytes / 3 gave 0.86-1.45x (tests/api/test_context_block.py keeps the first above the tokenizer's count);
#: JSON dense with ids and short keys runs a little under (0.98x): WordPiece splits word fragments most.
_PIECES = re.compile(r"[A-Za-z]+|\S")
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
    """The tokens a budget counts for ``text``: ⌈letters / 4⌉ per run of ASCII letters, 1 per other character that is
    not whitespace. Lines add up: the count of a text is the sum of its lines' counts."""
    return sum((len(piece) + 3) // 4 if piece[0].isascii() and piece[0].isalpha() else 1
               for piece in _PIECES.findall(text))


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
    block's UTF-8 bytes, ``max_tokens`` (optional, 64..65536) its tokens as :func:`estimate_tokens` counts them; both
    hold. ``kinds`` and ``mode`` go to the search. ``explain`` lists what was left out, and why.
    """

    query: str | None = None
    max_bytes: Count = Field(default=DEFAULT_CONTEXT_BYTES, ge=MIN_CONTEXT_BYTES, le=MAX_CONTEXT_BYTES)
    max_tokens: Count | None = Field(default=None, ge=64, le=MAX_CONTEXT_BYTES)
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
    """Prompt-ready memory: ``text`` ("" when nothing fits or nothing is there) is within the request's budget in
    ``bytes`` and ``tokens`` (:func:`estimate_tokens`); ``items`` cite each entry in it; ``omitted`` (only with ``explain``) says what
    was left out. ``mode`` is the search mode that ran (``None`` without a query); ``memories`` the heads read."""

    text: str
    bytes: int
    tokens: int
    items: tuple[ContextItem, ...]
    omitted: tuple[ContextOmission, ...] = ()
    mode: str | None = None
    memories: tuple[MemoryRef, ...] = ()
