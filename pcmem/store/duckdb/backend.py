"""The default storage backend: one DuckDB file.

Threading: DuckDB connections are not safe to share between threads, so each transaction borrows a cursor on the one
database instance (cheap; they share the buffer pool and catalog) and returns it to a small pool afterwards. Writes
are serialised by one lock per backend (DuckDB allows a single writer per file anyway); reads run concurrently under
DuckDB's MVCC and never wait for a write to finish. One process should have one backend per file:
the composition root (:mod:`pcmem.compose.registry`) hands every runtime of a path the same one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pcmem.analysis import Analyzer
from pcmem.errors import ConcurrentWriteError, PcmemError, StoreError, StoreFormatError, StoreLockedError
from pcmem.store.common import (
    PAGING_SECRET_KEY,
    V_COLUMNS,
    CompletenessMemo,
    PagingSecret,
    VersionCache,
    assemble_candidates,
    check_candidate_limit,
    check_events,
    entry,
    new_paging_secret,
    next_revision,
    utc,
    version_from_row,
)
from pcmem.store.duckdb import blocks, connection, erasure, files, fts_index, indexes, migrations, vectors
from pcmem.store.duckdb import check as check_module
from pcmem.store.duckdb.arrow import registered
from pcmem.store.duckdb.fts_cache import FtsCache
from pcmem.store.duckdb.vector_cache import VectorCache
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import (
    Change,
    EntryVersion,
    HistoryEvent,
    MemoryEntry,
    MemoryRef,
    Operation,
    RevisionInfo,
    ScopeSummary,
    Tombstone,
)
from pcmem.types.storage import ChannelCandidates, EntryEvent, HeadEntry, VectorStatus
from pcmem.validation import canonical_json

if TYPE_CHECKING:
    import numpy as np
    pass


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None)


class DuckDBBackend:
    """A :class:`~pcmem.store.port.StorageBackend` on one DuckDB file.

    DuckDB lets one process at a time open a file. By default the backend holds the file for its lifetime (fastest:
    ~0.5 ms per statement). With ``shared=True`` it opens the file per transaction and closes it right after
    (~60 ms each), so several processes — the TUI, an agent, the CLI — can use one store; a process that finds the
    file busy retries for up to ``lock_timeout`` seconds before raising StoreError.

    ``index_lookups=False`` reads a file whose index blocks are damaged: DuckDB looks the keys of a filter that
    reaches a table scan up in the column's index before it decides to scan (even with index scans turned off), and
    stops at a damaged index block. With filter and join-filter pushdown off no filter reaches a scan, so no index
    is read; every filter scans its table (slow: for ``pcmem check`` and the copy ``pcmem migrate`` makes of a
    damaged file).
    """

    def __init__(self, path: str | Path, *, shared: bool = False, lock_timeout: float = 10.0,
                 create: bool = True, index_lookups: bool = True) -> None:
        #: The store file, resolved once (symlinks followed): DuckDB, its log and every check use this one path.
        self.path = files.store_path(path)
        existed = files.check_path(self.path, create=create)
        if existed:
            files.check_readable(self.path)
        else:
            files.make_private_folders(self.path.parent)
        #: A store whose file or folder is not writable opens read-only: reads work, writes raise StoreReadOnlyError.
        self.read_only = existed and not files.writable(self.path)
        self.shared = shared
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._closed = False
        self._users = 1
        self._on_close: list[Callable[[], object]] = []
        self._users_lock = threading.Lock()
        self._vector_cache = VectorCache()
        self._fts_cache = FtsCache()
        self._complete = CompletenessMemo()
        self._versions = VersionCache()
        self._paging_secret = PagingSecret()
        connections: _Connections | None = None
        try:
            connections = self._connections = _Connections(self.path, lock_timeout, shared=shared,
                                                           read_only=self.read_only, index_lookups=index_lookups)
            with connections.cursor() as db:
                self._prepare(db)
                unreclaimed = not self.read_only and erasure.pending(db)
            if unreclaimed:
                self.reclaim()  # an erasure whose bytes could not be cleared when it committed
        except BaseException as error:
            if connections is not None:
                connections.close()
            if not existed and not isinstance(error, StoreLockedError):  # locked: another process just made it
                remove_store_files(self.path)
            raise

    def _prepare(self, db: duckdb.DuckDBPyConnection) -> None:
        """Apply pending migrations and read the analyzer; damaged pcmem metadata becomes a typed error."""
        try:
            pending = migrations.pending(db)
            if pending and self.read_only:
                files.refuse_write(self.path)
            if len(pending) == len(migrations.MIGRATIONS):  # pcmem initialises the file: a new one, or one adopted
                files.make_owner_only(self.path)  # from another tool (0644) — before any entry is written into it
            if pending:
                self._private_wal()
                migrations.migrate(db)
                db.execute("CHECKPOINT")  # schema changes never wait in the log for a replay (see indexes.py)
            self.analyzer = fts_index.stored_analyzer(db)
        except duckdb.Error as error:
            raise StoreFormatError(f"{self.path}: pcmem's own tables are damaged ({_first_line(error)}); "
                                   "restore a backup or copy the entries out with an older pcmem") from error
        except KeyError as error:
            raise StoreFormatError(f"{self.path}: the store names an unknown full-text analyzer {error}") from None

    def _private_wal(self) -> None:
        # DuckDB creates FILE.wal with the umask's mode (0644) and keeps the mode of one it finds: create it
        # owner-only first. It is deleted at each checkpoint, so this runs before every write transaction.
        if not self.read_only:
            files.prepare_wal(self.path)

    # --- connection plumbing ----------------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, *, write: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """One DuckDB transaction on this thread; driver errors become StoreError. Nested use on the same thread
        joins the open transaction (one snapshot). The cursor goes back to the pool afterwards."""
        if self._closed:
            raise StoreError("the store is closed")
        open_cursor = getattr(self._local, "cursor", None)
        if open_cursor is not None:
            yield open_cursor
            return
        if write and self.read_only:
            files.refuse_write(self.path)
        with self._connections.cursor() as cursor:
            if write:
                self._private_wal()
            cursor.execute("BEGIN TRANSACTION")
            self._local.cursor = cursor
            try:
                yield cursor
            except duckdb.Error as error:
                _rollback(cursor)
                raise _translate(error, "store operation failed") from error
            except BaseException:
                _rollback(cursor)
                raise
            else:
                try:
                    cursor.execute("COMMIT")
                except duckdb.Error as error:
                    raise _translate(error, "store commit failed") from error
            finally:
                self._local.cursor = None

    def share(self) -> bool:
        """One more runtime uses this backend (see :mod:`pcmem.compose.registry`); False once it is closed."""
        with self._users_lock:
            if self._closed:
                return False
            self._users += 1
            return True

    def close(self) -> None:
        """Release one user; the file is closed when the last one releases it."""
        with self._users_lock:
            if self._closed:
                return
            self._users -= 1
            if self._users > 0:
                return
            self._closed = True
        self._connections.close()
        for callback in self._on_close:
            callback()

    def when_closed(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` after the last user closed this backend (the per-process registry forgets it)."""
        self._on_close.append(callback)

    # --- writes -----------------------------------------------------------------------------------------------

    @contextmanager
    def write(self, scope: str) -> Iterator[_DuckDBWrite]:
        with self._write_lock, self._transaction(write=True) as cursor:
            yield _DuckDBWrite(cursor, scope, _find_memory(cursor, scope), self.analyzer, self._versions.clear)

    # --- reads ------------------------------------------------------------------------------------------------

    def find_memory(self, scope: str) -> MemoryRef | None:
        with self._transaction() as cursor:
            return _find_memory(cursor, scope)

    def scope_summaries(self) -> list[ScopeSummary]:
        with self._transaction() as cursor:
            rows = cursor.execute(
                """
                SELECT m.scope, m.artifact_id, m.head_revision, m.updated_at,
                       count(h.entry_id) FILTER (WHERE h.state = 'active'),
                       count(h.entry_id) FILTER (WHERE h.state = 'retired')
                FROM memories m LEFT JOIN head_entries h USING (artifact_id)
                GROUP BY ALL ORDER BY m.scope
                """
            ).fetchall()
        return [
            ScopeSummary(
                scope=scope,
                artifact_id=artifact_id,
                head_revision=head,
                updated_at=utc(updated),
                active_count=active,
                retired_count=retired,
            )
            for scope, artifact_id, head, updated, active, retired in rows
        ]

    def revisions(self, memory: MemoryRef) -> list[RevisionInfo]:
        with self._transaction() as cursor:
            rows = cursor.execute(
                "SELECT revision, operation, created_at, change_count FROM revisions "
                "WHERE artifact_id = ? AND revision <= ? ORDER BY revision",
                [memory.artifact_id, memory.revision],
            ).fetchall()
        return [
            RevisionInfo(revision=rev, operation=op, created_at=utc(at), change_count=count)
            for rev, op, at, count in rows
        ]

    def manifest(self, memory: MemoryRef, *, include_retired: bool) -> list[MemoryEntry]:
        states = ("active", "retired") if include_retired else ("active",)
        with self._transaction() as cursor:
            rows = cursor.execute(
                f"""
                WITH standing AS (
                    SELECT entry_id, arg_max(entry_version_id, revision) AS entry_version_id,
                           arg_max(state, revision) AS state
                    FROM entry_events WHERE artifact_id = $artifact AND revision <= $revision
                    GROUP BY entry_id
                )
                SELECT s.state, {V_COLUMNS}
                FROM standing s JOIN entry_versions v USING (entry_version_id)
                WHERE s.state IN $states ORDER BY v.entry_id
                """,
                {"artifact": memory.artifact_id, "revision": memory.revision, "states": list(states)},
            ).fetchall()
        return [entry(memory, row[0], version_from_row(row[1:])) for row in rows]

    def entry_in_revision(self, memory: MemoryRef, entry_id: str) -> MemoryEntry | None:
        with self._transaction() as cursor:
            row = cursor.execute(
                f"""
                SELECT e.state, {V_COLUMNS}
                FROM entry_events e JOIN entry_versions v USING (entry_version_id)
                WHERE e.artifact_id = ? AND e.entry_id = ? AND e.revision <= ?
                ORDER BY e.revision DESC LIMIT 1
                """,
                [memory.artifact_id, entry_id, memory.revision],
            ).fetchone()
        return None if row is None else entry(memory, row[0], version_from_row(row[1:]))

    def changes(self, memory: MemoryRef, since_revision: int) -> list[Change]:
        with self._transaction() as cursor:
            rows = cursor.execute(
                """
                SELECT e.revision, r.operation, e.entry_id, e.entry_version_id, e.state
                FROM entry_events e JOIN revisions r USING (artifact_id, revision)
                WHERE e.artifact_id = ? AND e.revision > ? AND e.revision <= ?
                ORDER BY e.revision, e.entry_id
                """,
                [memory.artifact_id, since_revision, memory.revision],
            ).fetchall()
        return [
            Change(revision=rev, operation=op, entry_id=entry_id, entry_version_id=version_id, state=state)
            for rev, op, entry_id, version_id, state in rows
        ]

    def history(self, memory: MemoryRef, entry_id: str) -> list[HistoryEvent]:
        with self._transaction() as cursor:
            rows = cursor.execute(
                f"""
                SELECT e.revision, r.operation, e.state, r.created_at,
                       {V_COLUMNS}
                FROM entry_events e
                JOIN revisions r USING (artifact_id, revision)
                JOIN entry_versions v USING (entry_version_id)
                WHERE e.artifact_id = ? AND e.entry_id = ? AND e.revision <= ?
                ORDER BY e.revision
                """,
                [memory.artifact_id, entry_id, memory.revision],
            ).fetchall()
        return [
            HistoryEvent(revision=row[0], operation=row[1], state=row[2], created_at=utc(row[3]),
                         entry=version_from_row(row[4:]))
            for row in rows
        ]

    def tombstone(self, memory: MemoryRef, entry_id: str) -> Tombstone | None:
        with self._transaction() as cursor:
            return erasure.tombstone(cursor, memory.artifact_id, entry_id)

    def paging_secret(self) -> bytes:
        return self._paging_secret.get(self._stored_paging_secret)

    def _stored_paging_secret(self) -> str | None:
        with self._transaction() as cursor:
            secret = _meta(cursor, PAGING_SECRET_KEY)
        if secret is not None or self.read_only:
            return secret
        with self._write_lock, self._transaction(write=True) as cursor:
            # NOT EXISTS rather than a conflict clause: another process (shared mode) may have made it meanwhile
            cursor.execute("INSERT INTO pcmem_meta SELECT $key, $value WHERE NOT EXISTS "
                           "(SELECT 1 FROM pcmem_meta WHERE key = $key)",
                           {"key": PAGING_SECRET_KEY, "value": new_paging_secret()})
            return _meta(cursor, PAGING_SECRET_KEY)

    def reclaim(self) -> None:
        """Rewrite the tables that held erased rows, checkpoint, and overwrite the freed blocks (see erasure.py);
        then overwrite and delete the set-aside copies of damaged logs (``FILE.wal.damaged*``), which may hold the
        erased text too.

        Raises StoreError when another transaction of this process stays open for more than 10 s; the erasure
        itself is committed then, and the next open of the store finishes the reclaim."""
        with self._write_lock, self._connections.cursor() as cursor:
            if self.read_only:
                files.refuse_write(self.path)
            self._private_wal()
            try:
                erasure.reclaim(cursor)
            except duckdb.Error as error:
                raise StoreError(f"the entry is erased from every read, but its bytes could not be cleared from the "
                                 f"file yet ({_first_line(error)}); the next open of the store clears them") from error
            files.erase_damaged_wal_copies(self.path)
        self._vector_cache.invalidate()
        self._fts_cache.invalidate()
        self._versions.clear()

    # --- integrity --------------------------------------------------------------------------------------------

    def check(self) -> check_module.CheckReport:
        """Verify the file without changing it (see :mod:`pcmem.store.duckdb.check`): first every storage block on
        disk (blocks.py), while this process holds the file and no write of it can checkpoint, then the contents."""
        with self._write_lock, self._transaction() as cursor:
            return check_module.check(cursor, self._connections.scan_blocks())

    def repair(self, analyzer: str | None = None) -> check_module.CheckReport:
        """Rebuild derived data from the event log in one transaction (optionally with another full-text analyzer);
        returns the check after the repair. A file with damaged storage blocks is left as it is (a rebuild cannot
        rewrite them, and a write that meets one can leave DuckDB unable to roll back): the check says what to do."""
        with self._write_lock:
            scan = self._connections.scan_blocks()
            if not scan.ok:
                with self._transaction() as cursor:
                    report = check_module.check(cursor, scan)
                report.problems.append("--repair changed nothing: it rebuilds derived data but cannot rewrite "
                                       "damaged blocks")
                return report
            self._rebuild_indexes()
            with self._transaction(write=True) as cursor:
                check_module.repair(cursor, analyzer)
                self.analyzer = fts_index.stored_analyzer(cursor)
        self._vector_cache.invalidate()
        self._fts_cache.invalidate()
        self._versions.clear()
        return self.check()

    def _rebuild_indexes(self) -> None:
        if self.read_only:
            files.refuse_write(self.path)
        self._private_wal()
        with self._connections.cursor() as cursor:
            try:
                indexes.rebuild(cursor)
            except duckdb.Error as error:
                raise _translate(error, "rebuilding the store's indexes failed") from error

    # --- search -----------------------------------------------------------------------------------------------

    def embedding_profile(self) -> EmbeddingProfile | None:
        with self._transaction() as cursor:
            return vectors.profile(cursor)

    def set_embedding_profile(self, profile: EmbeddingProfile) -> None:
        with self._write_lock, self._transaction(write=True) as cursor:
            vectors.adopt(cursor, profile)
        self._vector_cache.invalidate()
        self._fts_cache.invalidate()
        self._versions.clear()

    def pending_embedding_profile(self) -> EmbeddingProfile | None:
        with self._transaction() as cursor:
            return vectors.profile(cursor, "pending")

    def secondary_embedding_profile(self) -> EmbeddingProfile | None:
        with self._transaction() as cursor:
            return vectors.profile(cursor, "secondary")

    def set_secondary_embedding_profile(self, profile: EmbeddingProfile | None) -> None:
        with self._write_lock, self._transaction(write=True) as cursor:
            vectors.set_secondary(cursor, profile)

    def begin_embedding_switch(self, profile: EmbeddingProfile) -> None:
        with self._write_lock, self._transaction(write=True) as cursor:
            vectors.begin_switch(cursor, profile)

    def commit_embedding_switch(self, profile: EmbeddingProfile) -> bool:
        with self._write_lock, self._transaction(write=True) as cursor:
            switched = vectors.commit_switch(cursor, profile)
        self._vector_cache.invalidate()
        self._fts_cache.invalidate()
        self._versions.clear()
        return switched

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One read snapshot for everything this thread reads inside the block (a search: mode check, candidates
        of every scope, their versions). The scope heads and the embedding profile are read once per snapshot."""
        with self._transaction():
            if getattr(self._local, "memo", None) is not None:
                yield
                return
            self._local.memo = {}
            try:
                yield
            finally:
                self._local.memo = None

    def _snapshot_read(self, cursor: duckdb.DuckDBPyConnection, key: str, scope: str | None,
                       ) -> tuple[MemoryRef | None, EmbeddingProfile | None]:
        """The scope's head and the active profile, once per :meth:`reading` snapshot (one statement)."""
        memo = getattr(self._local, "memo", None)
        if memo is not None and key in memo:
            return memo[key]
        row = cursor.execute(
            "SELECT m.artifact_id, m.head_revision, p.model_id, p.dimension, p.normalized "
            "FROM (SELECT 1) LEFT JOIN memories m ON m.scope = ? "
            "LEFT JOIN embedding_profile p ON p.role = 'active'",
            [scope],
        ).fetchone()
        memory = None if row[0] is None else MemoryRef(scope=scope or "", artifact_id=row[0], revision=row[1])
        profile = None if row[2] is None else EmbeddingProfile(model_id=row[2], dimension=row[3], normalized=row[4])
        if memo is not None:
            memo[key] = (memory, profile)
        return memory, profile

    def vector_status(self, scope: str) -> VectorStatus:
        with self._transaction() as cursor:
            memory, profile = self._snapshot_read(cursor, f"scope:{scope}", scope)
            if profile is None or memory is None:
                return VectorStatus(memory=memory, profile=profile, complete=profile is not None)
            key = (memory.artifact_id, memory.revision, profile)
            complete = self._complete.known_complete(key)
            if not complete:
                complete = vectors.complete(cursor, memory.artifact_id)
                if complete:
                    self._complete.remember_complete(key)
        return VectorStatus(memory=memory, profile=profile, complete=complete)

    def candidates(
        self, scope: str, *, fts_terms: Sequence[str] | None, query_vector: np.ndarray | None, limit: int
    ) -> ChannelCandidates:
        check_candidate_limit(limit)
        with self._transaction() as cursor:
            memory, profile = self._snapshot_read(cursor, f"scope:{scope}", scope)
            if memory is None:
                return ChannelCandidates(memory=None, fts=[], vector=[])
            fts = self._fts_cache.search(cursor, memory, list(fts_terms), limit) if fts_terms is not None else []
            vector = (
                self._vector_cache.search(cursor, memory, profile, query_vector, limit)
                if profile is not None and query_vector is not None else []
            )
            return assemble_candidates(memory, fts, vector, self._page_versions)

    def _page_versions(self, entry_version_ids: Sequence[str]) -> dict[str, EntryVersion]:
        """A search page's versions: cached ones from memory, the rest read in the search's snapshot (joined)."""
        found, missing = self._versions.split(entry_version_ids)
        if missing:
            read = self.entry_versions(missing)
            self._versions.add(read)
            found.update(read)
        return found

    def entry_versions(self, entry_version_ids: Sequence[str]) -> dict[str, EntryVersion]:
        if not entry_version_ids:
            return {}
        # A search page needs at most ~130 versions: an IN list of literals is an index scan of the primary key.
        with self._transaction() as cursor:
            rows = cursor.execute(
                f"SELECT {V_COLUMNS} FROM entry_versions v WHERE entry_version_id IN "
                f"{connection.in_list(entry_version_ids)}",
            ).fetchall()
        return {row[0]: version_from_row(row) for row in rows}

    def _vector_table(self, cursor: duckdb.DuckDBPyConnection, profile: EmbeddingProfile) -> str:
        table = vectors.table_for(cursor, profile)
        if table is None:
            raise StoreError(f"{profile.describe()} is not the active, pending or secondary embedding profile")
        return table

    def versions_missing_vectors(self, profile: EmbeddingProfile, limit: int) -> list[tuple[str, str]]:
        with self._transaction() as cursor:
            table = self._vector_table(cursor, profile)
            return cursor.execute(
                "SELECT v.entry_version_id, v.text FROM head_entries h JOIN entry_versions v USING (entry_version_id) "
                f"ANTI JOIN {table} e USING (entry_version_id) WHERE h.state = 'active' "
                "ORDER BY v.entry_version_id LIMIT ?",
                [limit],
            ).fetchall()

    def count_missing_vectors(self, profile: EmbeddingProfile) -> int:
        with self._transaction() as cursor:
            return vectors.count_missing(cursor, self._vector_table(cursor, profile))

    def store_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        """Store vectors computed for ``profile``; ignored unless it is the active or pending profile."""
        with self._write_lock, self._transaction(write=True) as cursor:
            if (table := vectors.table_for(cursor, profile)) is not None:
                vectors.store(cursor, batch, table)


    def stored_vectors(self, profile: EmbeddingProfile, entry_version_ids: Sequence[str]) -> dict[str, np.ndarray]:
        import numpy as np  # lazy: numpy costs ~0.15-0.2 s of a cold CLI call that searches full text only
        if not entry_version_ids:
            return {}
        with self._transaction() as cursor:
            if (table := vectors.table_for(cursor, profile)) is None:
                return {}
            rows = cursor.execute(
                f"SELECT entry_version_id, vec FROM {table} WHERE entry_version_id IN (SELECT unnest($ids))",
                {"ids": list(entry_version_ids)},
            ).fetchall()
        return {version_id: np.asarray(vec, dtype=np.float32) for version_id, vec in rows}


_IDLE_CURSORS = 8  # cursors kept for reuse; beyond that a returned cursor is closed
_TURN_GAP = 0.01  # seconds a shared-mode process leaves the file free between back-to-back transactions


class _Connections:
    """Cursors on the one DuckDB instance of a store, lent per transaction and returned afterwards (never one per
    thread for the thread's lifetime: 600 short-lived threads must not leave 600 cursors behind).

    Held (default): the instance stays open for the backend's lifetime. Shared: the instance is opened when the
    first transaction of this process starts and closed when the last one ends, so other processes get the file
    in between, while every thread of this process uses the same instance (two instances of one file in one
    process conflict: "Unique file handle conflict").
    """

    def __init__(self, path: Path, lock_timeout: float, *, shared: bool, read_only: bool,
                 index_lookups: bool = True) -> None:
        self._path, self._lock_timeout, self._shared, self._read_only = path, lock_timeout, shared, read_only
        self._index_lookups = index_lookups
        self._lock = threading.Lock()
        self._idle: list[duckdb.DuckDBPyConnection] = []
        self._users = 0
        self._closing = False
        self._db: duckdb.DuckDBPyConnection | None = None
        self._descriptor: int | None = None  # the file, for scan_blocks; closed only after DuckDB closed it
        self._released_at = 0.0
        if not shared:
            self._db = self._connect()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if self._shared:
            # Fairness between processes: right after closing the file, wait a moment before taking it again, so a
            # process polling for it (every ≤ 20 ms) gets its turn instead of starving behind a busy one.
            pause = _TURN_GAP - (time.monotonic() - self._released_at)
            if pause > 0:
                time.sleep(pause)
        db = connection.connect(self._path, lock_timeout=self._lock_timeout, read_only=self._read_only)
        if not self._index_lookups:
            # An instance-wide setting (every cursor): no filter, written or derived from a join's build side at
            # run time, reaches a table scan, so no scan looks its keys up in an index first.
            db.execute("SET disabled_optimizers = 'filter_pushdown,join_filter_pushdown'")
        return db

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            if self._closing:
                raise StoreError("the store is closed")
            if self._db is None:
                self._db = self._connect()
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
            last = self._users == 0 and (self._shared or self._closing)
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
                self._descriptor = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
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
            self._released_at = time.monotonic()
        if self._descriptor is not None:  # after DuckDB let the file go (see scan_blocks)
            os.close(self._descriptor)
            self._descriptor = None

    def close(self) -> None:
        with self._lock:
            self._closing = True
            if self._users == 0:
                self._release()


def _checkpoint_before_close(db: duckdb.DuckDBPyConnection) -> None:
    """Checkpoint from this client, not from DuckDB's close, which checkpoints without a client context and can
    write a replayed index without its rows (see indexes.py). A failure leaves the log for the next open."""
    try:
        db.execute("CHECKPOINT")
    except duckdb.Error:
        pass


def _first_line(error: BaseException) -> str:
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def _rollback(cursor: duckdb.DuckDBPyConnection) -> None:
    try:
        cursor.execute("ROLLBACK")
    except duckdb.Error:
        pass  # the transaction is already gone (DuckDB aborts it on some errors); the original error matters


def _translate(error: duckdb.Error, what: str) -> PcmemError:
    """A driver error as a pcmem error: a write-write conflict is a ConcurrentWriteError (retry), the rest
    StoreError."""
    if isinstance(error, duckdb.TransactionException) and "conflict" in str(error).lower():
        return ConcurrentWriteError(f"another writer changed the same rows at the same time; retry ({_first_line(error)})")
    return StoreError(f"{what}: {_first_line(error)}")


def remove_store_files(path: Path) -> None:
    """Remove a store file this process just created (and its log), after its creation failed. Best effort: on a
    read-only file system even a missing file answers EROFS, and the error that made us clean up is the one to raise."""
    for leftover in (path, files.wal_path(path)):
        try:
            leftover.unlink()
        except OSError:
            pass


def _meta(cursor: duckdb.DuckDBPyConnection, key: str) -> str | None:
    row = cursor.execute("SELECT value FROM pcmem_meta WHERE key = ?", [key]).fetchone()
    return None if row is None else str(row[0])


def _find_memory(cursor: duckdb.DuckDBPyConnection, scope: str) -> MemoryRef | None:
    row = cursor.execute("SELECT artifact_id, head_revision FROM memories WHERE scope = ?", [scope]).fetchone()
    return None if row is None else MemoryRef(scope=scope, artifact_id=row[0], revision=row[1])


class _DuckDBWrite:
    """A :class:`~pcmem.store.port.WriteTransaction` inside an open DuckDB transaction (see DuckDBBackend.write)."""

    def __init__(
        self, cursor: duckdb.DuckDBPyConnection, scope: str, memory: MemoryRef | None, analyzer: Analyzer,
        forget_cached_versions: Callable[[], None],
    ) -> None:
        self.analyzer = analyzer
        self._forget_cached_versions = forget_cached_versions
        self._cursor = cursor
        self._scope = scope
        self.memory = memory
        self._committed = False

    def head_entry(self, entry_id: str) -> HeadEntry | None:
        if self.memory is None:
            return None
        row = self._cursor.execute(
            f"""
            SELECT h.state, {V_COLUMNS}
            FROM head_entries h JOIN entry_versions v USING (entry_version_id)
            WHERE h.artifact_id = ? AND h.entry_id = ?
            """,
            [self.memory.artifact_id, entry_id],
        ).fetchone()
        return None if row is None else HeadEntry(version=version_from_row(row[1:]), state=row[0])

    def _head_rows(self, artifact_id: str, entry_ids: Sequence[str]) -> dict[str, tuple[int, str, str]]:
        """entry_id → (rowid, entry_version_id, state) of these entries' head rows, by an index scan on entry_id (a
        second filter would make DuckDB scan the table, so the scope is checked here)."""
        rows = self._cursor.execute(
            "SELECT rowid, artifact_id, entry_id, entry_version_id, state FROM head_entries "
            f"WHERE entry_id IN {connection.in_list(entry_ids)}"
        ).fetchall()
        return {entry_id: (rowid, version_id, state)
                for rowid, artifact, entry_id, version_id, state in rows if artifact == artifact_id}

    def existing_entry_ids(self, entry_ids: Sequence[str]) -> set[str]:
        import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it
        if self.memory is None or not entry_ids:
            return set()
        if len(entry_ids) <= fts_index.POINT_WRITES:
            return set(self._head_rows(self.memory.artifact_id, entry_ids))
        wanted = pa.table({"entry_id": pa.array(list(entry_ids), pa.string())})
        with registered(self._cursor, "pcmem_wanted", wanted):
            rows = self._cursor.execute(
                "SELECT h.entry_id FROM head_entries h JOIN pcmem_wanted w USING (entry_id) WHERE h.artifact_id = ?",
                [self.memory.artifact_id],
            ).fetchall()
        return {entry_id for (entry_id,) in rows}

    def embedding_profile(self) -> EmbeddingProfile | None:
        return vectors.profile(self._cursor)

    def erase(self, entry_ids: Sequence[str]) -> None:
        if self.memory is None:
            raise StoreError("nothing to erase in a scope with no memory")
        erasure.erase(self._cursor, self.memory.artifact_id, entry_ids)
        self._forget_cached_versions()  # erased text must not outlive the erasure in this process's memory

    def missing_vectors(self, entry_version_ids: Sequence[str]) -> set[str]:
        if vectors.profile(self._cursor) is None:
            return set(entry_version_ids)
        return vectors.missing(self._cursor, entry_version_ids)

    def secondary_embedding_profile(self) -> EmbeddingProfile | None:
        return vectors.profile(self._cursor, "secondary")

    def store_secondary_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        if batch and profile == vectors.profile(self._cursor, "secondary"):
            vectors.store(self._cursor, batch, vectors.TABLES["secondary"])

    def commit(
        self,
        operation: Operation,
        new_versions: Sequence[EntryVersion],
        events: Sequence[EntryEvent],
        now: datetime,
        vectors_by_version: Mapping[str, np.ndarray] | None = None,
        artifact_id: str | None = None,
    ) -> MemoryRef:
        if self._committed:
            raise StoreError("a write transaction commits at most once")
        self._committed = True
        artifact_id, revision = next_revision(self._scope, self.memory, artifact_id)
        check_events(events, new_versions, self._stored_version_ids)
        stamp = _naive_utc(now)
        self._write_memory_row(artifact_id, revision, stamp)
        self._cursor.execute(
            "INSERT INTO revisions VALUES (?, ?, ?, ?, ?)", [artifact_id, revision, operation, len(events), stamp]
        )
        self._insert_versions(artifact_id, revision, new_versions, stamp)
        self._apply_events(artifact_id, revision, events, vectors_by_version or {})
        self.memory = MemoryRef(scope=self._scope, artifact_id=artifact_id, revision=revision)
        return self.memory

    def _stored_version_ids(self, entry_version_ids: Sequence[str]) -> set[str]:
        import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it
        wanted = pa.table({"entry_version_id": pa.array(list(entry_version_ids), pa.string())})
        with registered(self._cursor, "pcmem_wanted_versions", wanted):
            rows = self._cursor.execute(
                "SELECT entry_version_id FROM entry_versions JOIN pcmem_wanted_versions USING (entry_version_id)"
            ).fetchall()
        return {version_id for (version_id,) in rows}

    def _write_memory_row(self, artifact_id: str, revision: int, stamp: datetime) -> None:
        if revision == 1:
            self._cursor.execute(
                "INSERT INTO memories VALUES (?, ?, ?, ?, ?)", [artifact_id, self._scope, revision, stamp, stamp]
            )
        else:
            self._cursor.execute(
                "UPDATE memories SET head_revision = ?, updated_at = ? WHERE artifact_id = ?",
                [revision, stamp, artifact_id],
            )

    def _insert_versions(
        self, artifact_id: str, revision: int, new_versions: Sequence[EntryVersion], stamp: datetime
    ) -> None:
        import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it
        if not new_versions:
            return
        versions = pa.table(
            {
                "entry_version_id": [v.entry_version_id for v in new_versions],
                "artifact_id": pa.array([artifact_id] * len(new_versions), pa.string()),
                "entry_id": [v.entry_id for v in new_versions],
                "version": pa.array([v.version for v in new_versions], pa.int64()),
                "kind": [v.kind for v in new_versions],
                "text": [v.text for v in new_versions],
                "content_hash": [v.content_hash for v in new_versions],
                "metadata": [canonical_json(v.metadata) for v in new_versions],
                "created_in_revision": pa.array([revision] * len(new_versions), pa.int64()),
                "created_at": pa.array([stamp] * len(new_versions), pa.timestamp("us")),
            }
        )
        with registered(self._cursor, "pcmem_versions", versions):
            self._cursor.execute("INSERT INTO entry_versions SELECT * FROM pcmem_versions")

    def _apply_events(
        self, artifact_id: str, revision: int, events: Sequence[EntryEvent], vectors_by_version: Mapping[str, np.ndarray]
    ) -> None:
        """Log the events, move the search projections, then the head rows of the touched entries (O(change))."""
        import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it
        cursor = self._cursor
        changed = pa.table(
            {
                "artifact_id": pa.array([artifact_id] * len(events), pa.string()),
                "revision": pa.array([revision] * len(events), pa.int64()),
                "entry_id": pa.array([e.entry_id for e in events], pa.string()),
                "entry_version_id": pa.array([e.entry_version_id for e in events], pa.string()),
                "state": pa.array([e.state for e in events], pa.string()),
            }
        )
        with registered(cursor, "pcmem_changed", changed):
            cursor.execute("INSERT INTO entry_events SELECT * FROM pcmem_changed")
            if len(events) <= fts_index.POINT_WRITES:
                self._move_heads_by_lookups(artifact_id, events, vectors_by_version)
                return
            self._update_search_projections(vectors_by_version)
            # O(change): only the head rows of the entries this revision touched are updated or added.
            cursor.execute(
                """
                UPDATE head_entries h SET entry_version_id = c.entry_version_id, state = c.state
                FROM pcmem_changed c WHERE h.artifact_id = c.artifact_id AND h.entry_id = c.entry_id
                """
            )
            cursor.execute(
                """
                INSERT INTO head_entries
                SELECT c.artifact_id, c.entry_id, c.entry_version_id, c.state FROM pcmem_changed c
                WHERE NOT EXISTS (SELECT 1 FROM head_entries h
                                  WHERE h.artifact_id = c.artifact_id AND h.entry_id = c.entry_id)
                """
            )

    def _move_heads_by_lookups(self, artifact_id: str, events: Sequence[EntryEvent],
                               vectors_by_version: Mapping[str, np.ndarray]) -> None:
        """What :meth:`_update_search_projections` and the head moves below do, for a few events: every row is found
        through an index (head rows by entry id, versions by primary key) and changed by rowid, so a write costs
        the same in a store of 1,000 or 1,000,000 entries."""
        cursor = self._cursor
        heads = self._head_rows(artifact_id, [e.entry_id for e in events])
        fts_index.remove_documents(cursor, [version_id for _, version_id, state in heads.values() if state == "active"])
        activated = [e.entry_version_id for e in events if e.state == "active"]
        if activated:
            texts = cursor.execute(f"SELECT entry_version_id, text FROM entry_versions WHERE entry_version_id IN "
                                   f"{connection.in_list(activated)}").fetchall()
            fts_index.add_documents(cursor, texts, self.analyzer)
        if vectors_by_version and vectors.profile(cursor) is not None:
            vectors.store(cursor, vectors_by_version)
        moved = [e for e in events if e.entry_id in heads]
        if moved:
            rowids = ", ".join(str(heads[e.entry_id][0]) for e in moved)
            version_case = " ".join(f"WHEN {heads[e.entry_id][0]} THEN {connection.literal(e.entry_version_id)}"
                                    for e in moved)
            state_case = " ".join(f"WHEN {heads[e.entry_id][0]} THEN {connection.literal(e.state)}" for e in moved)
            cursor.execute(f"UPDATE head_entries SET entry_version_id = CASE rowid {version_case} END, "
                           f"state = CASE rowid {state_case} END WHERE rowid IN ({rowids})")
        if len(moved) < len(events):
            new_only = f" WHERE c.entry_id NOT IN {connection.in_list(heads)}" if heads else ""
            cursor.execute("INSERT INTO head_entries SELECT c.artifact_id, c.entry_id, c.entry_version_id, c.state "
                           f"FROM pcmem_changed c{new_only}")

    def _update_search_projections(self, vectors_by_version: Mapping[str, np.ndarray]) -> None:
        """Before head_entries moves: drop the touched entries' active docs from the FTS index, add the new ones."""
        cursor = self._cursor
        previous = cursor.execute(
            "SELECT h.entry_version_id FROM head_entries h JOIN pcmem_changed c USING (artifact_id, entry_id) "
            "WHERE h.state = 'active'"
        ).fetchall()
        fts_index.remove_documents(cursor, [version_id for (version_id,) in previous])
        becoming_active = cursor.execute(
            "SELECT c.entry_version_id, v.text FROM pcmem_changed c JOIN entry_versions v USING (entry_version_id) "
            "WHERE c.state = 'active'"
        ).fetchall()
        fts_index.add_documents(cursor, becoming_active, self.analyzer)
        if vectors_by_version and vectors.profile(cursor) is not None:
            vectors.store(cursor, vectors_by_version)
