"""What changed between two versions of an entry, as styled text (difflib, word level).

Entry texts are mostly one paragraph, so a line diff would just say "everything changed". Words are compared
instead and marked like ``git diff --word-diff=plain`` (``[-old-]{+new+}``) so the change reads without colour too.
"""

from __future__ import annotations

import difflib
import json
import re

from rich.text import Text

from pcmem import EntryVersion, HistoryEvent

_TOKENS = re.compile(r"\s+|[^\s]+")

DELETED = "bold red strike"
INSERTED = "bold green"


def word_diff(old: str, new: str) -> Text:
    """``new`` with the words removed from ``old`` shown as ``[-…-]`` and the words added as ``{+…+}``."""
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    result = Text()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            result.append("".join(before[i1:i2]))
            continue
        if tag in ("replace", "delete"):
            result.append(f"[-{''.join(before[i1:i2])}-]", style=DELETED)
        if tag in ("replace", "insert"):
            result.append(f"{{+{''.join(after[j1:j2])}+}}", style=INSERTED)
    return result


def _field_changes(old: EntryVersion, new: EntryVersion) -> Text:
    changes = Text()
    if old.kind != new.kind:
        changes.append(f"kind: {old.kind} → {new.kind}\n", style="yellow")
    if old.metadata != new.metadata:
        changes.append(f"metadata: {json.dumps(old.metadata)} → {json.dumps(new.metadata)}\n", style="yellow")
    return changes


def describe_event(events: tuple[HistoryEvent, ...], index: int) -> Text:
    """What the event at ``index`` changed compared with the event before it (history is oldest first)."""
    event = events[index]
    header = Text(f"r{event.revision} {event.operation}: ", style="bold")
    if index == 0:
        return header + Text(f"first version (v{event.entry.version})")
    previous = events[index - 1]
    if previous.entry.entry_version_id == event.entry.entry_version_id:
        return header + Text(f"state {previous.state} → {event.state}; text unchanged (v{event.entry.version})")
    header.append(f"v{previous.entry.version} → v{event.entry.version}\n")
    return header + _field_changes(previous.entry, event.entry) + word_diff(previous.entry.text, event.entry.text)
