"""Writes made with an idempotency key happen once: the same write sent again is answered, not applied again.

A write given an ``idempotency_key`` records, **in its own transaction**, the key and the outcome it returns. The
same write sent again with the same key — after its answer was lost (a connection that broke, an owner killed
between its COMMIT and its reply), to the same process or to another one that took the store over — finds the record
inside its transaction and returns the recorded outcome instead of running again, whatever was written since
(payment APIs' idempotency keys). The record and the write commit together or not at all, so there is no moment at
which a write is applied but not recorded. A write that is refused (a conflict, an unknown entry) commits nothing
and records nothing: sending it again runs it again on the store as it is then — it has not been applied, so it
cannot be applied twice.

What is recorded (:class:`~pcmem.types.storage.WriteRecord`): the key, the scope, the operation, a fingerprint of
what was asked **by ids** (operation, scope, entry ids, expectations, flags: never a text, kind, metadata or reason),
and the :class:`~pcmem.types.memory.WriteResult` as JSON without any text (a duplicate's text is filled in again
from the resent request). So a ``forget`` leaves nothing of what it erased in the records: they hold ids and
citations, which a tombstone keeps too. A key sent again with another operation, scope or entries is refused
(InputError); with the same ids and another text it returns the first outcome (the text is not kept to compare).

How long records are kept is the engine's (:data:`pcmem.store.common.RECORDS_KEPT_FOR` and the rest): far longer
than a client resends a call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pcmem.errors import InputError
from pcmem.store.port import WriteTransaction
from pcmem.types.memory import EntryState, EntryVersion, MemoryEntry, RememberRequest, WriteResult
from pcmem.types.storage import WriteRecord
from pcmem.validation import canonical_json


@dataclass(frozen=True)
class KeyedWrite:
    """A write that carries an idempotency key: what it is recorded under and how it is recognised."""

    key: str
    scope: str
    operation: str
    #: sha256 of what the write asks, by ids (see the module docstring).
    fingerprint: str
    #: A remember's entry texts, in request order: a recorded duplicate's text is given back from them.
    texts: tuple[str, ...] = ()


def keyed(key: str | None, scope: str, operation: str, asked: dict[str, Any],
          texts: tuple[str, ...] = ()) -> KeyedWrite | None:
    """The :class:`KeyedWrite` of a write with ``key`` (``None`` for a write without one); ``asked``: what the write
    asks, by ids only."""
    if key is None:
        return None
    digest = hashlib.sha256(canonical_json([scope, operation, asked]).encode("utf-8")).hexdigest()
    return KeyedWrite(key, scope, operation, digest, texts)


def of_remember(key: str | None, scope: str, request: RememberRequest) -> KeyedWrite | None:
    return keyed(key, scope, "remember", {
        "entries": [entry.entry_id for entry in request.entries], "upsert": request.upsert,
        "allow_duplicates": request.allow_duplicates, "expected_revision": request.expected_revision,
    }, tuple(entry.text for entry in request.entries))


def of_head_write(key: str | None, scope: str, operation: str, entry_id: str, expected_revision: int | None,
                  expected_version: int | None) -> KeyedWrite | None:
    return keyed(key, scope, operation, {"entry_id": entry_id, "expected_revision": expected_revision,
                                         "expected_version": expected_version})


#: Reads entry versions by id (the store's :meth:`~pcmem.store.port.RevisionLog.entry_versions`).
VersionReader = Callable[[Sequence[str]], Mapping[str, EntryVersion]]


def once(write: KeyedWrite | None, body: Callable[[WriteTransaction], WriteResult], now: datetime,
         versions: VersionReader | None = None) -> Callable[[WriteTransaction], WriteResult]:
    """``body`` as a write that runs once per key: inside its transaction, the recorded outcome of an earlier run
    with the same key (its entries read back with ``versions``), else ``body``'s own, recorded in the same
    transaction."""
    if write is None:
        return body

    def run(tx: WriteTransaction) -> WriteResult:
        earlier = tx.recorded_write(write.key)
        if earlier is not None:
            result = replay(write, earlier)
            return result if versions is None else with_entries(result, write.operation, versions)
        result = body(tx)
        tx.record_write(WriteRecord(key=write.key, scope=write.scope, operation=write.operation,
                                    fingerprint=write.fingerprint, outcome=outcome(result), recorded_at=now))
        return result

    return run


def outcome(result: WriteResult) -> str:
    """``result`` as the JSON a record keeps: every field but the texts (the duplicates', the entries written)."""
    data = result.model_dump(mode="json", exclude={"entries"})
    for duplicate in data["duplicates"]:
        duplicate.pop("text")
    return canonical_json(data)


def with_entries(result: WriteResult, operation: str, versions: VersionReader) -> WriteResult:
    """A replayed ``result`` with the entries its write left (versions are immutable: read by id; the state is the
    one that operation leaves). A forget has none, and a version erased since is left out."""
    if operation in ("forget", "forget_scope") or not result.citations:
        return result
    found = versions([citation.entry_version_id for citation in result.citations])
    state: EntryState = "retired" if operation == "retire" else "active"
    entries = tuple(MemoryEntry(citation=citation, state=state, entry=found[citation.entry_version_id])
                    for citation in result.citations if citation.entry_version_id in found)
    return result.model_copy(update={"entries": entries})


def replay(write: KeyedWrite, earlier: WriteRecord) -> WriteResult:
    """The outcome recorded for ``write``'s key; InputError when the key was recorded for another write."""
    if (earlier.scope, earlier.operation, earlier.fingerprint) != (write.scope, write.operation, write.fingerprint):
        raise InputError(f"idempotency_key {write.key!r} was used for another write ({earlier.operation} in scope "
                         f"{earlier.scope!r}): a key names one write; make a new key for a new write")
    data = json.loads(earlier.outcome)
    for duplicate in data["duplicates"]:
        index = duplicate["index"]
        duplicate["text"] = write.texts[index] if 0 <= index < len(write.texts) else ""
    return WriteResult.model_validate(data)
