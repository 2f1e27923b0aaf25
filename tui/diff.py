"""What changed between two versions of an entry, as styled text (difflib).

Entry texts are mostly one paragraph, so a line diff would just say "everything changed". Words are compared
instead — and single characters inside CJK runs, which have no spaces (``20日`` → ``27日`` marks ``0``/``7``, not the
sentence) — and marked like ``git diff --word-diff=plain`` (``[-old-]{+new+}``) so the change reads without colour.
A rewrite (most of the text changed) shows as the old text replaced by the new one instead of interleaved words,
and long unchanged stretches between changes fold to ``…``.
"""

from __future__ import annotations

import difflib
import json
import re

from rich.text import Text

from pcmem import EntryVersion, HistoryEvent

_CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
#: One token per CJK character, else runs of whitespace, of word characters, or of other symbols.
_TOKENS = re.compile(rf"[{_CJK}]|\s+|[^\s{_CJK}\w]+|[^\s{_CJK}\W]+")

DELETED = "bold red strike"
INSERTED = "bold green"
#: Below this similarity (difflib ratio over tokens) the new text is shown as replacing the old one whole.
REWRITE_RATIO = 0.4
#: Unchanged text kept on each side of a change; longer unchanged stretches fold to "…".
CONTEXT = 40


def tokens(text: str) -> list[str]:
    return _TOKENS.findall(text)


def text_diff(old: str, new: str) -> Text:
    """``new`` with the removed parts shown as ``[-…-]`` and the added ones as ``{+…+}``, folded around changes."""
    before, after = tokens(old), tokens(new)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    if old and new and _similarity(before, after) < REWRITE_RATIO:
        return Text.assemble(("replaced:\n", "bold yellow"), (f"[-{old}-]", DELETED), "\n", (f"{{+{new}+}}", INSERTED))
    result = Text()
    opcodes = matcher.get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            result.append(_fold("".join(before[i1:i2]), first=index == 0, last=index == len(opcodes) - 1))
            continue
        if tag in ("replace", "delete"):
            result.append(f"[-{''.join(before[i1:i2])}-]", style=DELETED)
        if tag in ("replace", "insert"):
            result.append(f"{{+{''.join(after[j1:j2])}+}}", style=INSERTED)
    return result


def _similarity(before: list[str], after: list[str]) -> float:
    """How much of the wording survived: spaces and punctuation match everywhere and would hide a rewrite."""
    old_words, new_words = ([token for token in side if any(c.isalnum() for c in token)] for side in (before, after))
    return difflib.SequenceMatcher(None, old_words, new_words, autojunk=False).ratio()


def word_diff(old: str, new: str) -> Text:
    """Kept for callers of the first version: :func:`text_diff`."""
    return text_diff(old, new)


def _fold(same: str, *, first: bool, last: bool) -> str:
    """Unchanged text between changes, with its middle folded when it is longer than the context around it."""
    keep_head = 0 if first else CONTEXT
    keep_tail = 0 if last else CONTEXT
    if len(same) <= keep_head + keep_tail + 10:
        return same
    return f"{same[:keep_head]}…{same[len(same) - keep_tail:] if keep_tail else ''}"


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
    return header + _field_changes(previous.entry, event.entry) + text_diff(previous.entry.text, event.entry.text)


def compare_events(older: HistoryEvent, newer: HistoryEvent) -> Text:
    """Any two points of an entry's history (``m`` marks one, the cursor picks the other), older first: what the
    fields and the text became between them, or that the version is the same and only the state moved."""
    header = Text(f"r{older.revision} v{older.entry.version} {older.state} → r{newer.revision} v{newer.entry.version} "
                  f"{newer.state}: ", style="bold")
    if older.entry.entry_version_id == newer.entry.entry_version_id:
        return header + Text(f"the same version (v{newer.entry.version}); text unchanged")
    header.append("\n")
    return header + _field_changes(older.entry, newer.entry) + text_diff(older.entry.text, newer.entry.text)
