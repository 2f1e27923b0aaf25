"""The search form's filter fields as pcmem's request takes them: which scopes, kinds and metadata.

Pure functions of the fields' text, so the rules are in one place and testable alone. Dates go to pcmem as typed
(``2026-01-31`` or ``2026-01-31 14:00``, UTC): its request validates them and says what is wrong in one line.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from pcmem import InputError, metadata_filter

#: Typed in the scopes field: search every scope of the store.
EVERY_SCOPE = "*"


def names(text: str) -> list[str]:
    """Comma-separated names (scopes, kinds), stripped, blanks dropped, each once in the order typed."""
    return list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def scope_names(text: str, current: str, every: Callable[[], list[str]]) -> tuple[str, ...]:
    """Blank: the scope the search was opened on; ``*``: every scope (``every`` reads them); else the names typed."""
    if text.strip() == EVERY_SCOPE:
        found = tuple(every())
        if not found:
            raise InputError("the store has no scopes yet: nothing to search")
        return found
    return tuple(names(text)) or (current,)


def kinds(text: str) -> list[str] | None:
    """Blank: every kind."""
    return names(text) or None


def where(text: str) -> dict[str, Any] | None:
    """``KEY=JSON`` pairs separated by spaces, as ``pcmem search --where`` takes them (``user="ana" turn=3``); a value
    that is not JSON is taken as a string (``user=ana``); quote a pair that holds spaces (``'city=New York'``) and a
    string that looks like a number (``n='"3"'``)."""
    try:
        pairs = shlex.split(text)
    except ValueError as error:
        raise InputError(f"metadata filter: {error} (KEY=JSON pairs, e.g. user=ana turn=3)") from None
    return metadata_filter(pairs)
