"""A memory in the shapes ``pcmem export`` writes and ``pcmem import`` reads: pcmem's own JSON Lines, and mem0's JSON.

pcmem's line: ``{"scope", "entry_id", "kind", "text", "metadata", "created_at"}`` — every active entry as it stands,
lossless for its text, kind, key, metadata and date (a key written again after a forget, ``phone~2``, is exported as
its key, ``phone``: that is what a write names).

mem0's shapes: what its ``get_all`` returns (``{"results": [item, ...]}``, or a bare list of items), an item being
``{"id", "memory", "hash", "metadata", "categories", "created_at", "updated_at", "user_id"}``; and what its ``add`` takes
(``{"messages": [{"role", "content"}], "user_id", "metadata"}``, stored as given, as mem0 does with ``infer=False``).
Mapping: ``id`` ↔ the entry's key, ``memory`` ↔ text, a single ``categories`` label ↔ kind, ``user_id`` (else
``agent_id``, ``run_id``, ``app_id``) ↔ scope, ``updated_at`` (else ``created_at``) ↔ the entry's date (pcmem keeps one
date per version: mem0 out gives it as both). An ``add`` message becomes an entry of kind ``message`` with its ``role``
in the metadata, keyed by a digest of role and content, so importing the same request twice adds nothing twice.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pcmem.cli.jsonl import Imported
from pcmem.errors import InputError
from pcmem.types.memory import MemoryEntry, NewEntry
from pcmem.validation import parse_json, validate_scope

MAX_REPORTED = 20
_GENERATION = re.compile(r"~[0-9]+\Z")  # pcmem.memory.keys: a key written again after a forget
#: mem0's scope fields, in the order one is taken as the pcmem scope.
MEM0_SCOPES = ("user_id", "agent_id", "run_id", "app_id")


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def key_of(entry_id: str) -> str:
    """The key a write names an entry by: its id, without the generation a forget added (``phone~2`` → ``phone``)."""
    return _GENERATION.sub("", entry_id)


def pcmem_line(scope: str, entry: MemoryEntry) -> dict[str, Any]:
    version = entry.entry
    return {"scope": scope, "entry_id": key_of(version.entry_id), "kind": version.kind, "text": version.text,
            "metadata": version.metadata, "created_at": _time(version.created_at)}


def mem0_item(scope: str, entry: MemoryEntry) -> dict[str, Any]:
    version = entry.entry
    when = _time(version.created_at)
    return {"id": key_of(version.entry_id), "memory": version.text,
            "hash": hashlib.md5(version.text.encode("utf-8"), usedforsecurity=False).hexdigest(),
            "metadata": version.metadata, "categories": [version.kind], "created_at": when, "updated_at": when,
            "user_id": scope}


def read_mem0(text: str, path: Path) -> list[Imported]:
    """Every entry of a mem0 JSON document (``get_all`` output or ``add`` requests), all checked before any is
    returned: every bad item is named (up to :data:`MAX_REPORTED`)."""
    document = parse_json(text, str(path))
    if isinstance(document, dict) and "results" in document:
        document = document["results"]
    records = document if isinstance(document, list) else [document]
    found: list[Imported] = []
    problems: list[str] = []
    for number, record in enumerate(records, start=1):
        try:
            found += _mem0_record(record)
        except InputError as error:
            problems.append(f"{path} item {number}: {error}")
    if problems:
        more = f"; … and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        raise InputError(f"{len(problems)} bad items, nothing imported: {'; '.join(problems[:MAX_REPORTED])}{more}")
    return found


def _mem0_record(record: Any) -> list[Imported]:
    if not isinstance(record, dict):
        raise InputError("not a JSON object (a mem0 memory or add request)")
    scope = next((record[name] for name in MEM0_SCOPES if record.get(name)), None)
    scope = None if scope is None else validate_scope(scope)
    if "messages" in record:
        return [Imported(scope, entry) for entry in _mem0_messages(record["messages"], record.get("metadata"))]
    if "memory" not in record:
        raise InputError('has neither "memory" (a get_all item) nor "messages" (an add request)')
    categories = record.get("categories") or []
    if not isinstance(categories, list):
        raise InputError("categories must be a list")
    metadata = dict(record.get("metadata") or {})
    if len(categories) > 1:
        metadata["categories"] = categories  # pcmem has one kind: several labels stay in the metadata
    return [Imported(scope, NewEntry(
        text=record["memory"], entry_id=record.get("id"), metadata=metadata,
        kind=categories[0] if len(categories) == 1 else "fact",
        created_at=record.get("updated_at") or record.get("created_at")))]


def _mem0_messages(messages: Any, metadata: Any) -> list[NewEntry]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list):
        raise InputError("messages must be a list of {role, content} or a text")
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError("metadata must be a JSON object")
    entries = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise InputError("each message needs a text content")
        if not message["content"].strip():
            continue  # a turn with no text (an assistant's tool call): nothing to remember
        role = str(message.get("role", "user"))
        digest = hashlib.sha256(f"{role}\n{message['content']}".encode()).hexdigest()[:24]
        entries.append(NewEntry(text=message["content"], kind="message", entry_id=f"m0-{digest}",
                                metadata={**(metadata or {}), "role": role}))
    return entries
