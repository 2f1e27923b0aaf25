"""The default storage backend: one DuckDB file.

The class composes the parts: transactions on a cursor pool (:mod:`.transactions`), the write transaction
(:mod:`.write`), read SQL as functions over a cursor (:mod:`.reads`, :mod:`.vectors`, :mod:`.erasure`) and the
per-process caches a search reads through. Writes are serialised by one lock per backend (DuckDB allows a single
writer per file anyway); reads run concurrently under DuckDB's MVCC and never wait for a write to finish. One process
should have one backend per file: its engine (:mod:`pcmem.store.held`) hands every runtime of a file the same one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import duckdb

from pcmem.errors import StoreError, StoreFormatError, StoreLockedError
from pcmem.store import common
from pcmem.store.common import CompletenessMemo, VersionCache
from pcmem.store.duckdb import check as check_module
from pcmem.store.duckdb import erasure, files, fts_index, indexes, migrations, reads, vectors, wal
from pcmem.store.duckdb.connection import create_database
from pcmem.store.duckdb.files import remove_store_files
from pcmem.store.duckdb.fts_cache import FtsCache
from pcmem.store.duckdb.generation_memo import GenerationMemo
from pcmem.store.duckdb.meta_settings import MetaSettings
from pcmem.store.duckdb.schema_check import verify_head, verify_schema
from pcmem.store.duckdb.search_reads import SearchReads
from pcmem.store.duckdb.transactions import CursorPool, Transactions, first_line, translate
from pcmem.store.duckdb.vector_cache import VectorCache
from pcmem.store.duckdb.write import DuckDBWrite, opening_sql
from pcmem.store.duckdb.write_groups import TrackedWrite, WriteGroups, WritesInOneTransaction
from pcmem.store.port import WriteTransaction
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import (
    Change,
    HistoryEvent,
    MemoryEntry,
    MemoryRef,
    RevisionInfo,
    ScopeSummary,
    Tombstone,
)

if TYPE_CHECKING:
    import numpy as np

    from pcmem.settings import SearchFusion

__all__ = ["DuckDBBackend", "remove_store_files"]

T = TypeVar("T")


class DuckDBBackend(SearchReads):
    """A :class:`~pcmem.store.port.StorageBackend` on one DuckDB file.

    DuckDB lets one process at a time open a file: the backend holds it for its lifetime, and other processes reach
    the store through this one (its owner: :mod:`pcmem.owner`). A file another process holds is retried for up to
    ``lock_timeout`` seconds before StoreLockedError.

    ``index_lookups=False`` reads a file whose index blocks are damaged: DuckDB looks the keys of a filter that
    reaches a table scan up in the column's index before it decides to scan (even with index scans turned off), and
    stops at a damaged index block. With filter and join-filter pushdown off no filter reaches a scan, so no index
    is read; every filter scans its table (slow: for ``pcmem check`` and the copy ``pcmem migrate`` makes of a
    damaged file).
    """

    def __init__(self, path: str | Path, *, lock_timeout: float = 10.0, create: bool = True,
                 index_lookups: bool = True, resolved: bool = False) -> None:
        #: The store file, resolved once (symlinks followed): DuckDB, its log and every check use this one path.
        #: ``resolved``: ``path`` is that already (the engine located it).
        self.path = Path(path) if resolved else files.store_path(path)
        existed = files.check_path(self.path, create=create)
        if existed:
            files.check_readable(self.path)
        else:
            wal.prepare_leftover_wal(self.path)  # a log next to a missing store is refused before a store is made
            files.make_private_folders(self.path.parent)
            existed = not files.create_store_file(self.path, create_database)  # else: theirs
        #: A store whose file or folder is not writable opens read-only: reads work, writes raise StoreReadOnlyError.
        self.read_only = existed and not files.writable(self.path)
        self._write_lock = threading.Lock()
        self._snapshot = threading.local()  # the reading() block open on this thread, if any
        self._users = 1
        self._on_close: list[Callable[[], object]] = []
        self._users_lock = threading.Lock()
        self._vector_cache = VectorCache()
        self._fts_cache = FtsCache()
        self._complete = CompletenessMemo()
        self._versions = VersionCache()
        self._id_floor = fts_index.IdFloor()  # next full-text ids, kept between writes (under _write_lock)
        self._sound_scopes: set[str] = set()  # scopes whose head this backend verified before writing (_sound)
        self._pruning = common.RecordPruning()  # when a recording write drops old idempotency keys
        pool: CursorPool | None = None
        try:
            pool = self._connections = CursorPool(self.path, lock_timeout, read_only=self.read_only,
                                                 index_lookups=index_lookups)
            self._transactions = Transactions(self.path, pool, read_only=self.read_only)
            self._transaction = self._transactions.open
            self._settings = MetaSettings(self._transaction, self._write_lock, read_only=self.read_only)
            self._memo = GenerationMemo(self._transactions.clock)  # what is known as of the last write
            self.write_groups = WriteGroups(self._write_transaction)
            with pool.cursor() as db:
                self._prepare(db)
                unreclaimed = not self.read_only and erasure.pending(db)
            if unreclaimed:
                self.reclaim()  # an erasure whose bytes could not be cleared when it committed
        except BaseException as error:
            if pool is not None:
                pool.close()
            # a store this call created and could not set up goes, so no later open adopts it half-made; unless
            # another process holds it already (it opened the new file first, and is setting it up itself)
            if not existed and not isinstance(error, StoreLockedError):
                remove_store_files(self.path)
            raise

    def _prepare(self, db: duckdb.DuckDBPyConnection) -> None:
        """Apply pending migrations and read the analyzer; damaged pcmem metadata becomes a typed error."""
        try:
            verify_schema(db, self.path, [migration.name for migration in migrations.MIGRATIONS])
            pending = migrations.pending(db)
            if pending and self.read_only:
                files.refuse_write(self.path)
            if len(pending) == len(migrations.MIGRATIONS):  # pcmem initialises the file: a new one, or one adopted
                files.make_owner_only(self.path)  # from another tool (0644) — before any entry is written into it
            if pending:
                self._transactions.private_wal()
                migrations.migrate(db)
                db.execute("CHECKPOINT")  # schema changes never wait in the log for a replay (see indexes.py)
            self.analyzer = fts_index.stored_analyzer(db)
            self._settings.load(db)  # read with the open: no transaction of their own at the first search
            generation = self._memo.open()
            if generation is not None:
                self._memo.remember_profile(generation, vectors.profile(db))
        except duckdb.Error as error:
            raise StoreFormatError(f"{self.path}: pcmem's own tables are damaged ({first_line(error)}); "
                                   "restore a backup or copy the entries out with an older pcmem") from error
        except KeyError as error:
            raise StoreFormatError(f"{self.path}: the store names an unknown full-text analyzer {error}") from None

    def _forget_derived(self) -> None:
        """Drop what this process cached from the file after a change the caches cannot follow by revision (an
        erasure, a repair, a vector-space switch): erased text must not outlive the erasure in memory."""
        self._transactions.clock.tick()
        self._vector_cache.invalidate()
        self._fts_cache.invalidate()
        self._versions.clear()

    # --- users ------------------------------------------------------------------------------------------------

    def share(self) -> bool:
        """One more runtime uses this backend (see :mod:`pcmem.store.held`); False once it is closed."""
        with self._users_lock:
            if self._transactions.closed:
                return False
            self._users += 1
            return True

    def close(self) -> None:
        """Release one user; the file is closed when the last one releases it."""
        with self._users_lock:
            if self._transactions.closed:
                return
            self._users -= 1
            if self._users > 0:
                return
            self._transactions.closed = True
        self._connections.close()
        for callback in self._on_close:
            callback()

    def close_for_exit(self) -> None:
        """Close the file now, whatever the users (the process is exiting and no call is in flight any more: see
        :mod:`pcmem.compose.exit`). Idempotent."""
        with self._users_lock:
            if self._transactions.closed:
                return
            self._users = 0
            self._transactions.closed = True
        self._connections.close()
        for callback in self._on_close:
            callback()

    def when_closed(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` after the last user closed this backend (the per-process registry forgets it)."""
        self._on_close.append(callback)

    # --- writes -----------------------------------------------------------------------------------------------

    @contextmanager
    def write(self, scope: str) -> Iterator[DuckDBWrite]:
        with self._write_transaction(scope) as writes:
            yield writes(scope)

    def write_grouped(self, scope: str, body: Callable[[WriteTransaction], T]) -> T:
        """``body`` in a write transaction of ``scope`` shared with the writes other threads queued meanwhile (group
        commit, :mod:`.write_groups`); a thread inside a transaction writes in it, as :meth:`write` does."""
        if self._transactions.in_transaction():
            with self.write(scope) as tx:
                return body(tx)
        return self.write_groups.run(scope, body)

    @contextmanager
    def _write_transaction(self, scope: str) -> Iterator[WritesInOneTransaction]:
        """One write transaction, for a point write (:meth:`write`) or a group of them (:mod:`.write_groups`), first
        of ``scope``. It opens with the scope's head and the profiles when the memo of the write generation knows
        them (:mod:`.generation_memo`), else reads them with its BEGIN, and leaves its last write's in the memo."""
        with self._write_lock:
            if scope not in self._sound_scopes:  # verified before this write's transaction: a refusal writes nothing
                with self._transaction() as cursor:
                    self._sound(cursor, reads.find_memory(cursor, scope), scope)
            nested, before = self._transactions.in_transaction(), self._transactions.clock.begun()
            known = None if nested else self._memo.opening(scope)
            with self._transaction(write=True, first=None if known else opening_sql(scope)) as cursor:
                # held, the file is this process's alone: no other process takes full-text ids between two writes
                self._id_floor.begin_write(self._transactions.clock.begun())
                writes = WritesInOneTransaction(cursor, scope, known, lambda scope, memory, profiles: TrackedWrite(
                    cursor, scope, self._sound(cursor, memory, scope), self.analyzer, self._versions.clear,
                    profiles, self._id_floor, self._pruning))
                yield writes
            if not nested:  # what a search or the next write reads first: known at the generation this COMMIT made
                scope_left, (memory, profiles) = writes.left()
                self._memo.after_write(before + 1, scope_left, memory, profiles)

    def _sound(self, cursor: duckdb.DuckDBPyConnection, memory: MemoryRef | None, scope: str) -> MemoryRef | None:
        """``memory``, the head of ``scope``, once verified (before the first write to each scope in this backend,
        see :func:`.schema_check.verify_head`; a scope a group reaches later, inside its transaction)."""
        if scope not in self._sound_scopes:
            if memory is not None:
                verify_head(cursor, self.path, memory)
            self._sound_scopes.add(scope)
        return memory

    # --- reads ------------------------------------------------------------------------------------------------

    def find_memory(self, scope: str) -> MemoryRef | None:
        with self._transaction() as cursor:
            return reads.find_memory(cursor, scope)

    def scope_summaries(self) -> list[ScopeSummary]:
        with self._transaction() as cursor:
            return reads.scope_summaries(cursor)

    def revisions(self, memory: MemoryRef, *, since: int = 0) -> list[RevisionInfo]:
        with self._transaction() as cursor:
            return reads.revisions(cursor, memory, since)

    def manifest(self, memory: MemoryRef, *, include_retired: bool, after: str = "",
                 limit: int | None = None) -> list[MemoryEntry]:
        with self._transaction() as cursor:
            return reads.manifest(cursor, memory, include_retired=include_retired, after=after, limit=limit)

    def entry_in_revision(self, memory: MemoryRef, entry_id: str) -> MemoryEntry | None:
        with self._transaction() as cursor:
            return reads.entry_in_revision(cursor, memory, entry_id)

    def changes(self, memory: MemoryRef, since_revision: int) -> list[Change]:
        with self._transaction() as cursor:
            return reads.changes(cursor, memory, since_revision)

    def history(self, memory: MemoryRef, entry_id: str) -> list[HistoryEvent]:
        with self._transaction() as cursor:
            return reads.history(cursor, memory, entry_id)

    def tombstone(self, memory: MemoryRef, entry_id: str) -> Tombstone | None:
        with self._transaction() as cursor:
            return erasure.tombstone(cursor, memory.artifact_id, entry_id)

    def paging_secret(self) -> bytes:
        return self._settings.paging_secret()

    def search_fusion_default(self) -> SearchFusion | None:
        """Read once, then kept: :mod:`.meta_settings`."""
        return self._settings.search_fusion_default()

    def set_search_fusion_default(self, fusion: SearchFusion | None) -> None:
        self._settings.set_search_fusion_default(fusion)

    def reclaim(self) -> None:
        """Rewrite the tables that held erased rows, checkpoint, and overwrite the freed blocks (see erasure.py);
        then overwrite and delete the set-aside copies of damaged logs (``FILE.wal.damaged*``), which may hold the
        erased text too.

        Raises StoreError when another transaction of this process stays open for more than 10 s; the erasure
        itself is committed then, and the next open of the store finishes the reclaim."""
        with self._write_lock, self._connections.cursor() as cursor:
            self._transactions.refuse_if_read_only()
            self._transactions.private_wal()
            try:
                erasure.reclaim(cursor)
            except duckdb.Error as error:
                raise StoreError(f"the entry is erased from every read, but its bytes could not be cleared from the "
                                 f"file yet ({first_line(error)}); the next open of the store clears them") from error
            wal.erase_damaged_wal_copies(self.path)
        self._forget_derived()

    # --- integrity --------------------------------------------------------------------------------------------

    def check(self) -> check_module.CheckReport:
        """Verify the file without changing it (see :mod:`pcmem.store.duckdb.check`): first every storage block on
        disk (blocks.py), while this process holds the file and no write of it can checkpoint, then the contents."""
        with self._write_lock, self._transaction() as cursor:
            report = check_module.check(cursor, self._connections.scan_blocks())
        return check_module.note_log_copies(report, wal.damaged_wal_copies(self.path))

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
        self._forget_derived()
        return self.check()

    def _rebuild_indexes(self) -> None:
        self._transactions.refuse_if_read_only()
        self._transactions.private_wal()
        with self._connections.cursor() as cursor:
            try:
                indexes.rebuild(cursor)
            except duckdb.Error as error:
                raise translate(error, "rebuilding the store's indexes failed") from error

    # --- vector spaces ----------------------------------------------------------------------------------------

    def embedding_profile(self) -> EmbeddingProfile | None:
        """From the memo of the current write generation (:mod:`.generation_memo`) when it knows it, else read (inside a
        transaction of this thread: as that transaction sees it)."""
        generation = None if self._transactions.in_transaction() else self._memo.open()
        known = None if generation is None else self._memo.profile(generation)
        if known is not None:
            return known[0]
        with self._transaction() as cursor:
            profile = vectors.profile(cursor)
        if generation is not None:
            self._memo.remember_profile(generation, profile)
        return profile

    def set_embedding_profile(self, profile: EmbeddingProfile) -> None:
        with self._write_lock, self._transaction(write=True) as cursor:
            vectors.adopt(cursor, profile)
        self._forget_derived()

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
        self._forget_derived()
        return switched

    def versions_missing_vectors(self, profile: EmbeddingProfile, limit: int) -> list[tuple[str, str]]:
        with self._transaction() as cursor:
            return reads.versions_missing_vectors(cursor, profile, limit)

    def count_missing_vectors(self, profile: EmbeddingProfile) -> int:
        with self._transaction() as cursor:
            return vectors.count_missing(cursor, reads.vector_table(cursor, profile))

    def store_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        """Store vectors computed for ``profile``; ignored unless it is the active or pending profile."""
        with self._write_lock, self._transaction(write=True) as cursor:
            if (table := vectors.table_for(cursor, profile)) is not None:
                vectors.store(cursor, batch, table)

    def stored_vectors(self, profile: EmbeddingProfile, entry_version_ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not entry_version_ids:
            return {}
        with self._transaction() as cursor:
            return reads.stored_vectors(cursor, profile, entry_version_ids)
