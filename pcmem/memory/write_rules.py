"""The rules every write of :class:`~pcmem.memory.scoped.SyncScopedMemory` follows before it decides anything:
compare-and-swap on the scope head and the entry version, re-running after a race lost to another process, the
accepted shapes of a request, and a key's current identity (see :mod:`pcmem.memory.keys`)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pcmem.errors import ConcurrentWriteError, InputError, RevisionConflictError
from pcmem.ids import content_hash, new_id
from pcmem.memory import keys
from pcmem.memory.upsert import Identity
from pcmem.store.port import WriteTransaction
from pcmem.types.memory import EntryVersion, MemoryRef, NewEntry, WriteResult
from pcmem.types.storage import HeadEntry

#: Attempts of a write without a scope expectation when another process commits to the scope at the same moment
#: (DuckDB reports a write-write conflict, seekdb a duplicate scope row): the write is re-decided on the new head.
WRITE_ATTEMPTS = 6


def check_expected(tx: WriteTransaction, expected: int | None) -> None:
    check_head(tx.memory, expected)


def check_version(current: HeadEntry, expected: int | None) -> None:
    if expected is not None and current.version.version != expected:
        raise RevisionConflictError(
            f"expected version {expected} of entry {current.version.entry_id!r} but it is at version "
            f"{current.version.version}", expected=expected, actual=current.version.version, about="version")


def retrying(write: Callable[[], WriteResult], retry: bool) -> WriteResult:
    """Run ``write``; when it has no scope expectation, re-run it after a lost race with another process."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            return write()
        except ConcurrentWriteError:
            if not retry or attempt == WRITE_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.002, 0.01) * 2**attempt)  # jittered backoff: ≤ ~0.6 s over all attempts
    raise AssertionError("unreachable")


def check_head(memory: MemoryRef | None, expected: int | None) -> None:
    head = 0 if memory is None else memory.revision
    if expected is not None and expected != head:
        raise RevisionConflictError(
            f"expected revision {expected} but the head of scope is {head}", expected=expected, actual=head
        )


def identity(tx: WriteTransaction, key: str) -> Identity:
    """``key``'s current identity in a write (see :mod:`pcmem.memory.keys`); its head entry is ``None`` when the
    identity does not exist yet (a write creates ``entry_id``)."""
    current = tx.head_entry(key)
    if current is not None or tx.memory is None or not tx.existing_entry_ids([key]):
        return Identity(key, current, current is not None)
    entry_id, exists = keys.resolve(key, lambda i: bool(tx.existing_entry_ids([i])),
                                    lambda i: tx.head_entry(i) is None)
    return Identity(entry_id, tx.head_entry(entry_id) if exists else None, exists)


def identities(tx: WriteTransaction, entry_ids: list[str]) -> dict[str, Identity]:
    """The identities of those of ``entry_ids`` the scope has ever held (one lookup finds which); the rest are new."""
    taken = tx.existing_entry_ids(entry_ids) if tx.memory is not None else set()
    return {entry_id: identity(tx, entry_id) for entry_id in entry_ids if entry_id in taken}


def expect(value: Any, kind: type, method: str) -> Any:
    if not isinstance(value, kind):
        raise InputError(f"{method} takes a {kind.__name__}, not {type(value).__name__}")
    return value


def next_revision(tx: WriteTransaction) -> int:
    return 1 if tx.memory is None else tx.memory.revision + 1


def first_version(entry: NewEntry, revision: int, now: datetime) -> EntryVersion:
    return EntryVersion(
        entry_id=entry.entry_id or new_id("ent"),
        entry_version_id=new_id("ver"),
        version=1,
        kind=entry.kind,
        text=entry.text,
        content_hash=content_hash(entry.text),
        metadata=entry.metadata,
        created_in_revision=revision,
        created_at=entry.created_at or now,
    )
