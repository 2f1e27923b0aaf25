"""Text typed into a Remember or Revise dialog that was closed without saving, kept until it is saved or discarded.

Reopening the same dialog (``n`` in the same scope, ``e`` on the same entry) brings it back, in this session and the
next: a store opened from a path keeps its drafts in a small file of the user's state folder
(``$XDG_STATE_HOME/pcmem/drafts/``, by default ``~/.local/state/pcmem/drafts/``), one file per store, private to the
user (folder 0700, file 0600) and never inside the store file, which agents share. The file is rewritten whole
(atomically) on each keep or drop; a missing, unreadable or damaged file counts as no drafts. When it cannot be
written (or the app runs on an open runtime, which has no path), drafts last the session and quitting says so.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from pcmem_tui.history import state_file

FOLDER = "drafts"


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


def drafts_file(store: str | Path) -> Path:
    return state_file(store, FOLDER)


def describe(key: tuple[str, ...]) -> str:
    """A draft's dialog, as the user knows it: ``Remember in 'notes'``, ``Revise 'n1' in 'notes'``."""
    if key[0] == "revise":
        return f"Revise {key[2]!r} in {key[1]!r}"
    return f"Remember in {key[1]!r}" if key[1] else "Remember"


class Drafts:
    """The kept drafts, by dialog; kept in ``file`` across sessions (``None``: this session only)."""

    def __init__(self, file: Path | None = None) -> None:
        self.file = file
        self._drafts: dict[tuple[str, ...], Draft] = _read(file) if file is not None else {}
        #: Why the last write of the file failed (``None``: the drafts on disk are the ones here).
        self.unsaved: str | None = None if file is not None else "the store was opened by the caller, not from a path"

    def get(self, key: tuple[str, ...]) -> Draft | None:
        return self._drafts.get(key)

    def keep(self, key: tuple[str, ...], draft: Draft) -> None:
        self._drafts[key] = draft
        self._save()

    def drop(self, key: tuple[str, ...]) -> None:
        if self._drafts.pop(key, None) is not None:
            self._save()

    def keys(self) -> list[tuple[str, ...]]:
        return list(self._drafts)

    def __len__(self) -> int:
        return len(self._drafts)

    def _save(self) -> None:
        if self.file is None:
            return
        try:
            _write(self.file, [{"key": list(key), "draft": asdict(draft)} for key, draft in self._drafts.items()])
            self.unsaved = None
        except OSError as error:
            self.unsaved = f"cannot write {self.file} ({error.strerror or error})"


def _read(file: Path) -> dict[tuple[str, ...], Draft]:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    known = {field.name for field in fields(Draft)}
    drafts: dict[tuple[str, ...], Draft] = {}
    for item in data.get("drafts", []) if isinstance(data, dict) else []:
        try:
            key = tuple(str(part) for part in item["key"])
            values: dict[str, Any] = {name: value for name, value in item["draft"].items() if name in known}
            drafts[key] = Draft(**values)
        except (KeyError, TypeError, AttributeError):
            continue  # one damaged draft does not cost the others
    return drafts


def _write(file: Path, drafts: list[dict[str, Any]]) -> None:
    """Rewrite ``file`` at once, private to the user (the drafts are the user's text, maybe not yet meant for
    anyone: the file is created 0600 in a 0700 folder)."""
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")  # 0600
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump({"drafts": drafts}, out, ensure_ascii=False)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
