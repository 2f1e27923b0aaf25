"""Text typed into a Remember or Revise dialog that was closed without saving, kept until it is saved or discarded.

Held by the app for its lifetime (a closed dialog, a conflict, a screen change cannot lose it); reopening the same
dialog (``n`` in the same scope, ``e`` on the same entry) brings it back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Draft:
    text: str
    kind: str = "fact"
    scope: str = ""
    #: Revise: the entry version the text was written against (a save checks the entry against it).
    version: int | None = None
    #: Remember: the id, the metadata (JSON as typed) and whether to upsert.
    entry_id: str = ""
    metadata: str = ""
    upsert: bool = False
    #: Why the write is made (Remember, Revise), as typed.
    reason: str = ""


def remember_key(scope: str | None) -> tuple[str, ...]:
    return ("remember", scope or "")


def revise_key(scope: str, entry_id: str) -> tuple[str, ...]:
    return ("revise", scope, entry_id)


class Drafts:
    def __init__(self) -> None:
        self._drafts: dict[tuple[str, ...], Draft] = {}

    def get(self, key: tuple[str, ...]) -> Draft | None:
        return self._drafts.get(key)

    def keep(self, key: tuple[str, ...], draft: Draft) -> None:
        self._drafts[key] = draft

    def drop(self, key: tuple[str, ...]) -> None:
        self._drafts.pop(key, None)

    def __len__(self) -> int:
        return len(self._drafts)
