"""Group commit: point writes that arrive on other threads while one write transaction runs go, in arrival order,
into the next transaction together — one BEGIN, one COMMIT, one fsync of DuckDB's log for the group.

Why: the store has one writer. Four threads that remember took turns at the write lock, and each paid a whole
transaction (its first reads, the COMMIT and the log's fsync) alone, so four threads wrote no faster than one. Now a
writer queues its write (a callable: what it does inside a write transaction) and waits; the first waiter that finds
no group running leads: it takes every queued write, runs them one after the other in one transaction and commits.
Writes that arrive meanwhile queue for the next group.

What each caller keeps:

- **Durability.** A caller returns only after the COMMIT that holds its write (or raises, and nothing of it stays).
- **Its own result or error, in order.** Each write runs on what the writes before it in the group left (its
  revision is the next one of its scope, as if it had run alone just after them), so compare-and-swap is exact: two
  writes of a group expecting the same version of an entry — the first wins, the second is refused. A write that
  refuses before writing anything (a revision or version mismatch, bad input) gets its error and the group goes on.
- **Isolation of failures.** DuckDB has no savepoints: when a write fails after it wrote (or DuckDB aborts the
  transaction, or the COMMIT fails), the whole group rolls back and its writes run again one by one, each in its own
  transaction, so every error lands on the write that caused it and the others commit.

The group runs on the leader's thread; a write of a thread already inside a transaction (it would join it) does not
queue (:meth:`DuckDBBackend.write_grouped`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import duckdb

from pcmem.errors import PcmemError, StoreError
from pcmem.store.duckdb.generation_memo import Opening
from pcmem.store.duckdb.write import DuckDBWrite, opened, opening_sql
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import EntryVersion, MemoryRef, Operation
from pcmem.types.storage import EntryEvent, WriteRecord

if TYPE_CHECKING:
    import numpy as np

    from pcmem.store.port import WriteTransaction

T = TypeVar("T")

#: Opens one write transaction and yields a maker of writes inside it, one per queued write (scope → write).
OpenGroup = Callable[[str], AbstractContextManager[Callable[[str], "TrackedWrite"]]]


class TrackedWrite(DuckDBWrite):
    """A :class:`DuckDBWrite` that records whether it wrote: a write that raises before writing leaves the group's
    transaction as it found it, so the group goes on; one that raises after writing cannot be undone alone."""

    wrote = False

    def commit(self, operation: Operation, new_versions: Sequence[EntryVersion], events: Sequence[EntryEvent],
               now: datetime, vectors_by_version: Mapping[str, np.ndarray] | None = None,
               artifact_id: str | None = None, reason: str | None = None) -> MemoryRef:
        self.wrote = True
        return super().commit(operation, new_versions, events, now, vectors_by_version, artifact_id, reason)

    def store_secondary_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        self.wrote = self.wrote or bool(batch)
        super().store_secondary_vectors(profile, batch)

    def erase(self, entry_ids: Sequence[str]) -> None:
        self.wrote = True
        super().erase(entry_ids)

    def record_write(self, record: WriteRecord) -> None:
        self.wrote = True
        super().record_write(record)

    def transaction_alive(self) -> bool:
        """DuckDB still runs the transaction: after a failed statement it aborts it, and a COMMIT then succeeds
        silently having written nothing — the writes before a refusal would be acknowledged and lost."""
        try:
            self._cursor.execute("SELECT 1").fetchall()
        except duckdb.Error:
            return False
        return True


@dataclass(eq=False)
class _Queued(Generic[T]):
    """One caller's write, waiting for a group to run it."""

    scope: str
    body: Callable[[WriteTransaction], T]
    finished: bool = False
    decided: bool = False  #: ``result`` or ``error`` is this write's own
    result: Any = None
    error: BaseException | None = None

    def decide(self, result: Any, error: BaseException | None) -> None:
        self.result, self.error, self.decided = result, error, True

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return self.result


class _GroupBroken(Exception):
    """A write of the group failed after writing, or DuckDB failed: roll the group back (never leaves this module)."""


@dataclass
class GroupStats:
    """What the groups did (tests read it: that writes were grouped at all)."""

    groups: int = 0  #: transactions committed for more than one write
    grouped_writes: int = 0  #: writes committed in those
    fallbacks: int = 0  #: groups rolled back and run again one write at a time


@dataclass
class WriteGroups:
    """The queue of writes of one backend and the group that runs them (see the module's docstring)."""

    open_group: OpenGroup
    stats: GroupStats = field(default_factory=GroupStats)
    _queue: list[_Queued[Any]] = field(default_factory=list)
    _leading: bool = False
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def run(self, scope: str, body: Callable[[WriteTransaction], T]) -> T:
        """Run ``body`` in a write transaction of ``scope``, with whatever other writes are queued; its result once
        the transaction holding it committed, or its own error."""
        mine: _Queued[T] = _Queued(scope, body)
        with self._changed:
            self._queue.append(mine)
            while self._leading and not mine.finished:
                self._changed.wait()
            if mine.finished:
                return mine.outcome()
            self._leading = True
            group, self._queue = self._queue, []
        try:
            self._run_group(group)
        finally:
            with self._changed:
                for queued in group:
                    if not queued.decided:  # the leader stopped on an error of its own (not a write's)
                        queued.decide(None, StoreError("the write stopped before its transaction committed; "
                                                       "look before writing it again"))
                    queued.finished = True
                self._leading = False
                self._changed.notify_all()
        return mine.outcome()

    def held(self) -> AbstractContextManager[None]:
        """Lead an empty group until the block ends: writes queue meanwhile and run as the next group (tests)."""
        return self._held()

    @contextmanager
    def _held(self) -> Iterator[None]:
        with self._changed:
            while self._leading:
                self._changed.wait()
            self._leading = True
        try:
            yield
        finally:
            with self._changed:
                self._leading = False
                self._changed.notify_all()

    def queued(self) -> int:
        """Writes waiting for a group (tests)."""
        with self._changed:
            return len(self._queue)

    def _run_group(self, group: list[_Queued[Any]]) -> None:
        if len(group) > 1:
            try:
                self._together(group)
                self.stats.groups += 1
                self.stats.grouped_writes += len(group)
                return
            except _GroupBroken:
                self.stats.fallbacks += 1
            except PcmemError:  # the BEGIN or the COMMIT failed: each write again, alone
                self.stats.fallbacks += 1
        for queued in group:
            self._alone(queued)

    def _together(self, group: list[_Queued[Any]]) -> None:
        outcomes: list[tuple[Any, BaseException | None]] = []
        with self.open_group(group[0].scope) as write_for:
            for queued in group:
                tx = write_for(queued.scope)
                try:
                    outcomes.append((queued.body(tx), None))
                except PcmemError as error:
                    if tx.wrote or not tx.transaction_alive():
                        raise _GroupBroken from error
                    outcomes.append((None, error))  # refused before writing: the transaction is as it was
                except BaseException as error:  # DuckDB's own error may have aborted the transaction
                    raise _GroupBroken from error
        for queued, (result, error) in zip(group, outcomes, strict=True):  # committed: hand each its outcome
            queued.decide(result, error)

    def _alone(self, queued: _Queued[Any]) -> None:
        try:
            with self.open_group(queued.scope) as write_for:
                result = queued.body(write_for(queued.scope))
        except BaseException as error:  # the caller's own error, raised on the caller's thread
            queued.decide(None, error)
        else:
            queued.decide(result, None)


class WritesInOneTransaction:
    """The maker of the writes of one group on ``cursor`` (scope → write). Each write starts from the head the
    group's earlier writes left in its scope (read in the transaction once per scope, then carried from write to
    write); the profiles are read once. ``opening``: the first scope's head and the profiles when already known
    (:mod:`.generation_memo`), else :func:`opening_sql` of ``first_scope`` waits on ``cursor`` for them."""

    def __init__(self, cursor: Any, first_scope: str, opening: Opening | None,
                 make: Callable[[str, MemoryRef | None, dict[str, EmbeddingProfile]], TrackedWrite]) -> None:
        first_memory, self._profiles = opening or opened(cursor, first_scope)
        self._cursor, self._make = cursor, make
        self._heads: dict[str, MemoryRef | None] = {first_scope: first_memory}
        self._last: dict[str, TrackedWrite] = {}
        self._latest = first_scope

    def __call__(self, scope: str) -> TrackedWrite:
        if scope in self._last:
            self._heads[scope] = self._last[scope].memory  # the head its write left (unchanged if it did not commit)
        elif scope not in self._heads:
            self._heads[scope], _ = opened(self._cursor.execute(opening_sql(scope)), scope)
        self._last[scope] = self._make(scope, self._heads[scope], self._profiles)
        self._latest = scope
        return self._last[scope]

    def left(self) -> tuple[str, Opening]:
        """The scope of the group's last write and the opening a next write of it finds (once committed)."""
        write = self._last.get(self._latest)
        memory = write.memory if write is not None else self._heads[self._latest]
        return self._latest, (memory, self._profiles)
