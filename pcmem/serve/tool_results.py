"""The shapes the agent tools answer with. Every entry, wherever it appears (a list, a search hit, a write, recent
entries), has one flat shape, :func:`entry_json`; a hit adds its score."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pcmem
from pcmem.serve.tool_declaration import Json


def entry_json(scope: str, value: pcmem.MemoryEntry) -> Json:
    """An entry as every tool result shows it: what it says, its state, and how to name it (``entry_id``, the
    ``version`` a compare-and-swap expects, the exact ``citation``)."""
    version = value.entry
    return {"scope_id": scope, "entry_id": version.entry_id, "version": version.version, "kind": version.kind,
            "text": version.text, "state": value.state, "metadata": version.metadata,
            "created_at": time_text(version.created_at), "citation": str(value.citation)}


def hit_json(scope: str, hit: pcmem.MemoryHit) -> Json:
    """A search hit as :func:`entry_json` shows its entry, from the hit alone: a search reads a scope's active head
    entries, so every hit is active in the revision it cites, and it carries its version and date (no read per hit:
    through a client of the store's owner each read was a round trip)."""
    assert hit.version is not None and hit.created_at is not None
    return {"scope_id": scope, "entry_id": hit.citation.entry_id, "version": hit.version, "kind": hit.kind,
            "text": hit.text, "state": "active", "metadata": hit.metadata, "created_at": time_text(hit.created_at),
            "citation": str(hit.citation)}


def time_text(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def written(scoped: Any, result: pcmem.WriteResult) -> Json:
    """``{changed, entry}``: whether the write changed anything, and the entry as the write left it (carried by the
    result; a duplicate the write gate found, or an entry of a resent write erased since, is read by citation)."""
    changed = not (result.unchanged or result.unchanged_entry_ids or result.duplicates)
    if result.entries:
        return {"changed": changed, "entry": entry_json(scoped.scope, result.entries[0])}
    cited = result.citations[0] if result.citations else (result.duplicates[0].existing if result.duplicates else None)
    return {"changed": changed, "entry": None if cited is None else entry_json(scoped.scope, scoped.get(cited))}


def erased(result: pcmem.WriteResult) -> Json:
    """``{changed, erased_entry_ids}``."""
    return {"changed": not result.unchanged and bool(result.citations),
            "erased_entry_ids": [citation.entry_id for citation in result.citations]}
