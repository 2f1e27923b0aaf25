"""The cursor pool of one store file and the transactions lent from it.

Threading: DuckDB connections are not safe to share between threads, so each transaction borrows a cursor on the one
database instance (cheap; they share the buffer pool and catalog) and returns it to a small pool afterwards. Nested
use on the same thread joins the open transaction (one snapshot). Driver errors leave here as pcmem errors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from pcmem import system
from pcmem.errors import ConcurrentWriteError, PcmemError, StoreError
from pcmem.native_calls import hold_back_while_exiting, native_call
from pcmem.store.duckdb import blocks, connection, files
from pcmem.store.duckdb.write_clock import WriteClock, clock_for

_IDLE_CURSORS = 8  # cursors kept for reuse; beyond that a returned cursor is closed


class CursorPool:
    """Cursors on the one DuckDB instance of a store, lent per transaction and returned afterwards (never one per
    thread for the thread's lifetime: 600 short-lived threads must not leave 600 cursors behind). The instance stays
    open for the backend's lifetime."""

    def __init__(self, path: Path, lock_timeout: float, *, read_only: bool, index_lookups: bool = True) -> None:
        self._path, self._lock_timeout, self._read_only = path, lock_timeout, read_only
        self._index_lookups = index_lookups
        self._lock = threading.Lock()
        self._idle: list[duckdb.DuckDBPyConnection] = []
        self._users = 0
        self._closing = False
        self._descriptor: int | None = None  # the file, for scan_blocks; closed only after DuckDB closed it
        self._db: duckdb.DuckDBPyConnection | None = self._connect()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        with native_call():
            db = connection.connect(self._path, lock_timeout=self._lock_timeout, read_only=self._read_only)
        if not self._index_lookups:
            # An instance-wide setting (every cursor): no filter, written or derived from a join's build side at
            # run time, reaches a table scan, so no scan looks its keys up in an index first.
            db.execute("SET disabled_optimizers = 'filter_pushdown,join_filter_pushdown'")
        return db

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with native_call(), self._borrowed() as cursor:  # see pcmem.native_calls: DuckDB and the interpreter's exit
            yield cursor

    @contextmanager
    def _borrowed(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            if self._closing or self._db is None:
                hold_back_while_exiting()
                raise StoreError("the store is closed")
            cursor = self._idle.pop() if self._idle else connection.quiet(self._db.cursor())
            self._users += 1
        reusable = False
        try:
            yield cursor
            reusable = True
        finally:
            self._give_back(cursor, reusable)

    def _give_back(self, cursor: duckdb.DuckDBPyConnection, reusable: bool) -> None:
        with self._lock:
            self._users -= 1
            last = self._users == 0 and self._closing
            if reusable and not last and len(self._idle) < _IDLE_CURSORS:
                self._idle.append(cursor)
            else:
                cursor.close()
            if last:
                self._release()

    def scan_blocks(self) -> blocks.BlockScan:
        """Verify every storage block of the file on disk (blocks.py), inside a transaction of this process.

        Through a descriptor kept open until DuckDB has closed the file: closing a descriptor of the file while
        DuckDB holds it would drop DuckDB's lock (POSIX locks belong to the process and go with any close)."""
        with self._lock:
            if self._db is None:
                raise StoreError("the store is not open")
            if self._descriptor is None:
                self._descriptor = os.open(self._path, os.O_RDONLY | system.BINARY)
            descriptor = self._descriptor
        return blocks.scan_descriptor(descriptor, self._path)

    def _release(self) -> None:
        for idle in self._idle:
            idle.close()
        self._idle.clear()
        if self._db is not None:
            if not self._read_only:
                _checkpoint_before_close(self._db)
            self._db.close()
            self._db = None
        if self._descriptor is not None:  # after DuckDB let the file go (see scan_blocks)
            os.close(self._descriptor)
            self._descriptor = None

    def close(self) -> None:
        with self._lock:
            self._closing = True
            if self._users == 0:
                self._release()


class Transactions:
    """DuckDB transactions on a store's cursor pool, at most one open per thread; writes keep the log private."""

    def __init__(self, path: Path, pool: CursorPool, *, read_only: bool) -> None:
        self.path = path
        self.pool = pool
        self.read_only = read_only
        #: Moves around each write transaction's COMMIT: what a search remembers is stale once it moved.
        self.clock: WriteClock = clock_for(path)
        #: Set by the backend when its last user closed it: every later transaction raises StoreError.
        self.closed = False
        self._local = threading.local()

    def private_wal(self) -> None:
        # DuckDB creates FILE.wal with the umask's mode (0644) and keeps the mode of one it finds: create it
        # owner-only first. It is deleted at each checkpoint, so this runs before every write transaction.
        if not self.read_only:
            files.prepare_wal(self.path)

    def refuse_if_read_only(self) -> None:
        if self.read_only:
            files.refuse_write(self.path)

    @contextmanager
    def open(self, *, write: bool = False, first: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """One DuckDB transaction on this thread; driver errors become StoreError. Nested use on the same thread
        joins the open transaction (one snapshot). The cursor goes back to the pool afterwards.

        ``first``: a statement the transaction starts with, run in the same call into DuckDB as its ``BEGIN`` (each
        call into DuckDB's client has a fixed cost: a point write's first read); its result waits on the cursor."""
        if self.closed:
            hold_back_while_exiting()
            raise StoreError("the store is closed")
        if write:
            self.refuse_if_read_only()
        with self._open(write=write, first=first) as cursor:
            yield cursor

    def in_transaction(self) -> bool:
        """A transaction is open on this thread (a read on it joins that transaction and sees its own writes)."""
        return getattr(self._local, "cursor", None) is not None

    @contextmanager
    def _open(self, *, write: bool, first: str | None) -> Iterator[duckdb.DuckDBPyConnection]:
        open_cursor = getattr(self._local, "cursor", None)
        if open_cursor is not None:
            self._local.writes = self._local.writes or write
            if first is not None:
                open_cursor.execute(first)  # inside the open transaction's block: its errors are handled there
            yield open_cursor
            return
        with self.pool.cursor() as cursor:
            if write:
                self.private_wal()
            self._local.cursor, self._local.writes = cursor, write
            try:
                cursor.execute("BEGIN TRANSACTION" if first is None else f"BEGIN TRANSACTION;\n{first}")
                yield cursor
            except duckdb.Error as error:
                _rollback(cursor)
                raise translate(error, "store operation failed") from error
            except BaseException:
                _rollback(cursor)
                raise
            else:
                self._commit(cursor, moves_clock=self._local.writes)
            finally:
                self._local.cursor = None

    def _commit(self, cursor: duckdb.DuckDBPyConnection, *, moves_clock: bool) -> None:
        """COMMIT; a write's COMMIT between two moves of the clock. Only the COMMIT moves it: until then no other
        transaction sees the write (MVCC), so what a search remembered of the last commit stays true while a write
        is under way, and searches beside a writer stay warm."""
        if moves_clock:
            self.clock.begin()
        try:
            cursor.execute("COMMIT")
        except duckdb.Error as error:
            raise translate(error, "store commit failed") from error
        finally:
            if moves_clock:
                self.clock.end()


def _checkpoint_before_close(db: duckdb.DuckDBPyConnection) -> None:
    """Checkpoint from this client, not from DuckDB's close, which checkpoints without a client context and can
    write a replayed index without its rows (see indexes.py). A failure leaves the log for the next open."""
    try:
        db.execute("CHECKPOINT")
    except duckdb.Error:
        pass


def first_line(error: BaseException) -> str:
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def _rollback(cursor: duckdb.DuckDBPyConnection) -> None:
    try:
        cursor.execute("ROLLBACK")
    except duckdb.Error:
        pass  # the transaction is already gone (DuckDB aborts it on some errors); the original error matters


def translate(error: duckdb.Error, what: str) -> PcmemError:
    """A driver error as a pcmem error: a write-write conflict is a ConcurrentWriteError (retry), the rest
    StoreError."""
    if isinstance(error, duckdb.TransactionException) and "conflict" in str(error).lower():
        return ConcurrentWriteError(f"another writer changed the same rows at the same time; retry ({first_line(error)})")
    return StoreError(f"{what}: {first_line(error)}")
