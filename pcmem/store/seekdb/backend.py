"""The scale-out storage backend: the pcmem store as SQL tables in OceanBase seekdb (embedded, server or cluster).

Same semantics as the DuckDB file (see :mod:`pcmem.store.port`): insert-only revisions, exact past manifests,
O(change) writes whose search projections move in the same transaction. Threading: one connection per thread;
writes are serialised in-process by a lock and across processes by a row lock (``SELECT ... FOR UPDATE``) on the
scope's ``memories`` row, so the head moves by exactly one per write even with several pcmem processes on one
server. Every read runs in a repeatable-read transaction: one snapshot, as the port requires.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from pcmem.analysis import ANALYZERS
from pcmem.errors import CapabilityNotSupportedError, StoreError
from pcmem.settings import SearchFusion
from pcmem.store.common import (
    PAGING_SECRET_KEY,
    SEARCH_FUSION_KEY,
    V_COLUMNS,
    CompletenessMemo,
    PagingSecret,
    RecordPruning,
    assemble_candidates,
    check_candidate_limit,
    check_dimension,
    entry,
    new_paging_secret,
    page_of,
    stored_search_fusion,
    utc,
    version_from_row,
)
from pcmem.store.seekdb import fulltext, schema, vectors
from pcmem.store.seekdb.connector import Connector, SeekdbTarget, parse
from pcmem.store.seekdb.sql import Connection, chunks, in_list, quote, render, row
from pcmem.store.seekdb.write import SeekdbWrite
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import (
    Change,
    EntryVersion,
    HistoryEvent,
    MemoryEntry,
    MemoryRef,
    RevisionInfo,
    ScopeSummary,
    Tombstone,
)
from pcmem.types.storage import ChannelCandidates, VectorStatus


class SeekdbBackend:
    """A :class:`~pcmem.store.port.StorageBackend` on seekdb. ``target``: a ``seekdb:`` URL or a parsed target.

    A server serves every process; an embedded data directory belongs to one process: another process waits up to
    ``lock_timeout`` seconds for it, then gets a StoreError.
    """

    def __init__(self, target: str | SeekdbTarget, *, lock_timeout: float = 10.0) -> None:
        self.target = parse(target) if isinstance(target, str) else target
        self._connector = Connector(self.target, lock_timeout)
        self._local = threading.local()
        self._connections: list[Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pruning = RecordPruning()  # when a recording write drops old idempotency keys
        self._closed = False
        self._complete = CompletenessMemo()
        self._paging_secret = PagingSecret()
        try:
            self.analyzer = ANALYZERS[schema.ensure(self._connection())]  # DDL: outside any transaction
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"SeekdbBackend({self.target.describe()!r})"

    # --- connection plumbing ----------------------------------------------------------------------------------

    def _connection(self) -> Connection:
        if self._closed:
            raise StoreError("the store is closed")
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._connector.connect()
            with self._connections_lock:
                self._connections.append(connection)
        return connection

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One transaction on this thread's connection; nested use joins it (one snapshot)."""
        db = self._connection()
        if getattr(self._local, "depth", 0):
            self._local.depth += 1
            try:
                yield db
            finally:
                self._local.depth -= 1
            return
        db.run("START TRANSACTION")
        self._local.depth = 1
        try:
            yield db
        except BaseException:
            self._local.depth = 0
            try:
                db.run("ROLLBACK")
            except StoreError:
                pass  # the original error is the one worth reporting
            raise
        else:
            self._local.depth = 0
            db.run("COMMIT")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._connections_lock:
            for connection in self._connections:
                try:
                    connection.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
            self._connections.clear()

    def paging_secret(self) -> bytes:
        return self._paging_secret.get(self._stored_paging_secret)

    def _stored_paging_secret(self) -> str:
        # Autocommit statements, not one transaction: the second read must see a secret another process made first.
        db = self._connection()
        if schema.meta(db, PAGING_SECRET_KEY) is None:
            schema.add_meta(db, PAGING_SECRET_KEY, new_paging_secret())
        secret = schema.meta(db, PAGING_SECRET_KEY)
        if secret is None:
            raise StoreError("the store's paging secret could not be kept")
        return secret

    def search_fusion_default(self) -> SearchFusion | None:
        """Read each time: several processes may serve one seekdb database, and any of them may change it."""
        return stored_search_fusion(schema.meta(self._connection(), SEARCH_FUSION_KEY))

    def set_search_fusion_default(self, fusion: SearchFusion | None) -> None:
        db = self._connection()
        if fusion is None:
            db.run(render("DELETE FROM pcmem_meta WHERE meta_key = %s", SEARCH_FUSION_KEY))
        else:
            schema.set_meta(db, SEARCH_FUSION_KEY, fusion)

    # --- writes -----------------------------------------------------------------------------------------------

    @contextmanager
    def write(self, scope: str) -> Iterator[SeekdbWrite]:
        with self._write_lock, self._transaction() as db:
            rows = db.run(render(
                "SELECT artifact_id, head_revision FROM memories WHERE scope_key = %s FOR UPDATE", schema.scope_key(scope)
            ))
            memory = MemoryRef(scope=scope, artifact_id=rows[0][0], revision=int(rows[0][1])) if rows else None
            yield SeekdbWrite(db, scope, memory, self.analyzer, self._pruning)

    # --- reads ------------------------------------------------------------------------------------------------

    def find_memory(self, scope: str) -> MemoryRef | None:
        with self._transaction() as db:
            return _find_memory(db, scope)

    def scope_summaries(self) -> list[ScopeSummary]:
        with self._transaction() as db:
            rows = db.run(
                "SELECT scope, artifact_id, head_revision, updated_at, active_count, retired_count FROM memories"
            )
        summaries = [
            ScopeSummary(scope=scope, artifact_id=artifact_id, head_revision=int(head), updated_at=utc(updated),
                         active_count=int(active), retired_count=int(retired))
            for scope, artifact_id, head, updated, active, retired in rows
        ]
        return sorted(summaries, key=lambda s: s.scope)

    def revisions(self, memory: MemoryRef, *, since: int = 0) -> list[RevisionInfo]:
        with self._transaction() as db:
            rows = db.run(render(
                "SELECT revision, operation, created_at, change_count, reason FROM revisions "
                "WHERE artifact_id = %s AND revision > %s AND revision <= %s ORDER BY revision",
                memory.artifact_id, since, memory.revision,
            ))
        return [RevisionInfo(revision=int(r), operation=op, created_at=utc(at), change_count=int(n), reason=reason)
                for r, op, at, n, reason in rows]

    def manifest(self, memory: MemoryRef, *, include_retired: bool, after: str = "",
                 limit: int | None = None) -> list[MemoryEntry]:
        """(The bounds are applied after the read: the server's collation need not order ids by their bytes.)"""
        states = in_list(("active", "retired") if include_retired else ("active",))
        artifact = quote(memory.artifact_id)
        with self._transaction() as db:
            if memory.revision == _head_revision(db, memory.artifact_id):  # the head: its projection is exact
                rows = db.run(
                    f"""SELECT h.state, {V_COLUMNS} FROM head_entries h
                        JOIN entry_versions v ON v.entry_version_id = h.entry_version_id
                        WHERE h.artifact_id = {artifact} AND h.state IN {states} ORDER BY h.entry_id"""
                )
            else:  # a past revision: each entry's latest event at or before it
                rows = db.run(
                    f"""SELECT e.state, {V_COLUMNS}
                        FROM (SELECT entry_id, MAX(revision) AS revision FROM entry_events
                              WHERE artifact_id = {artifact} AND revision <= {int(memory.revision)}
                              GROUP BY entry_id) latest
                        JOIN entry_events e ON e.artifact_id = {artifact} AND e.entry_id = latest.entry_id
                                           AND e.revision = latest.revision
                        JOIN entry_versions v ON v.entry_version_id = e.entry_version_id
                        WHERE e.state IN {states} ORDER BY e.entry_id"""
                )
        return page_of([entry(memory, r[0], version_from_row(r[1:])) for r in rows], after, limit)

    def entry_in_revision(self, memory: MemoryRef, entry_id: str) -> MemoryEntry | None:
        with self._transaction() as db:
            rows = db.run(render(
                f"""SELECT e.state, {V_COLUMNS} FROM entry_events e
                    JOIN entry_versions v ON v.entry_version_id = e.entry_version_id
                    WHERE e.artifact_id = %s AND e.entry_id = %s AND e.revision <= %s
                    ORDER BY e.revision DESC LIMIT 1""",
                memory.artifact_id, entry_id, memory.revision,
            ))
        return entry(memory, rows[0][0], version_from_row(rows[0][1:])) if rows else None

    def changes(self, memory: MemoryRef, since_revision: int) -> list[Change]:
        with self._transaction() as db:
            rows = db.run(render(
                """SELECT e.revision, r.operation, e.entry_id, e.entry_version_id, e.state, r.reason
                   FROM entry_events e JOIN revisions r ON r.artifact_id = e.artifact_id AND r.revision = e.revision
                   WHERE e.artifact_id = %s AND e.revision > %s AND e.revision <= %s
                   ORDER BY e.revision, e.entry_id""",
                memory.artifact_id, since_revision, memory.revision,
            ))
        return [Change(revision=int(rev), operation=op, entry_id=entry_id, entry_version_id=version_id, state=state,
                       reason=reason)
                for rev, op, entry_id, version_id, state, reason in rows]

    def history(self, memory: MemoryRef, entry_id: str) -> list[HistoryEvent]:
        with self._transaction() as db:
            rows = db.run(render(
                f"""SELECT e.revision, r.operation, e.state, r.created_at, r.reason, {V_COLUMNS}
                    FROM entry_events e
                    JOIN revisions r ON r.artifact_id = e.artifact_id AND r.revision = e.revision
                    JOIN entry_versions v ON v.entry_version_id = e.entry_version_id
                    WHERE e.artifact_id = %s AND e.entry_id = %s AND e.revision <= %s ORDER BY e.revision""",
                memory.artifact_id, entry_id, memory.revision,
            ))
        return [HistoryEvent(revision=int(r[0]), operation=r[1], state=r[2], created_at=utc(r[3]), reason=r[4],
                             entry=version_from_row(r[5:])) for r in rows]

    def tombstone(self, memory: MemoryRef, entry_id: str) -> Tombstone | None:
        with self._transaction() as db:
            rows = db.run(render(
                """SELECT e.revision, r.created_at FROM entry_events e
                   JOIN revisions r ON r.artifact_id = e.artifact_id AND r.revision = e.revision
                   WHERE e.artifact_id = %s AND e.entry_id = %s AND e.state = 'erased' ORDER BY e.revision LIMIT 1""",
                memory.artifact_id, entry_id))
            if not rows:
                return None
            versions = db.run(render(
                """SELECT entry_version_id FROM entry_events WHERE artifact_id = %s AND entry_id = %s
                   GROUP BY entry_version_id ORDER BY MIN(revision)""", memory.artifact_id, entry_id))
        return Tombstone(entry_id=entry_id, entry_version_ids=tuple(v for (v,) in versions),
                         erased_in_revision=int(rows[0][0]), erased_at=utc(rows[0][1]))

    def reclaim(self) -> None:
        """A no-op: the engine's own compaction reclaims deleted rows (the deleted text is no longer readable
        through SQL at once; its bytes leave the data files at the engine's next major compaction)."""

    def entry_versions(self, entry_version_ids: Sequence[str]) -> dict[str, EntryVersion]:
        found: dict[str, EntryVersion] = {}
        if not entry_version_ids:
            return found
        with self._transaction() as db:
            for batch in chunks(list(dict.fromkeys(entry_version_ids))):
                for values in db.run(f"SELECT {V_COLUMNS} FROM entry_versions v WHERE v.entry_version_id IN {in_list(batch)}"):
                    found[values[0]] = version_from_row(values)
        return found

    # --- embedding profiles -----------------------------------------------------------------------------------

    def _table_for(self, db: Connection, profile: EmbeddingProfile) -> str | None:
        """The vector table of ``profile`` when it is the active or the pending profile."""
        for known, table in vectors.profiles(db).values():
            if known == profile:
                return table
        return None

    def embedding_profile(self) -> EmbeddingProfile | None:
        with self._transaction() as db:
            active = vectors.profiles(db).get("active")
        return active[0] if active else None

    def pending_embedding_profile(self) -> EmbeddingProfile | None:
        with self._transaction() as db:
            pending = vectors.profiles(db).get("pending")
        return pending[0] if pending else None

    def set_embedding_profile(self, profile: EmbeddingProfile) -> None:
        with self._write_lock:
            db = self._connection()
            with self._transaction():
                active = vectors.profiles(db).get("active")
            if active is not None:
                if active[0] != profile:
                    raise StoreError(
                        f"the store's embedding profile is {active[0].describe()}; switching to {profile.describe()} "
                        "goes through an embedding switch (`pcmem reindex`)"
                    )
                return
            table = schema.create_vector_table(db, profile)  # DDL commits on its own: before the transaction
            with self._transaction():
                db.run(render("DELETE FROM embedding_profiles WHERE role = 'active'"))
                db.run("INSERT INTO embedding_profiles VALUES " + row("active", *_profile_values(profile), table))
            self._complete.clear()

    def begin_embedding_switch(self, profile: EmbeddingProfile) -> None:
        with self._write_lock:
            db = self._connection()
            with self._transaction():
                profiles = vectors.profiles(db)
            pending = profiles.get("pending")
            active = profiles.get("active")
            if pending is not None and pending[0] == profile:
                return  # resume: keep what was embedded so far
            if pending is not None:  # abandon the other pending profile and its vectors
                with self._transaction():
                    db.run("DELETE FROM embedding_profiles WHERE role = 'pending'")
                if active is None or active[1] != pending[1]:
                    schema.drop_table(db, pending[1])
            if active is not None and active[0] == profile:
                return  # nothing to switch to
            table = schema.create_vector_table(db, profile)
            with self._transaction():
                db.run("INSERT INTO embedding_profiles VALUES " + row("pending", *_profile_values(profile), table))

    def commit_embedding_switch(self, profile: EmbeddingProfile) -> bool:
        with self._write_lock:
            db = self._connection()
            with self._transaction():
                # Lock every scope's row first (the first statement, so the count below sees every write that
                # committed before): writers of existing scopes in other processes wait until the switch is done.
                db.run("SELECT artifact_id FROM memories FOR UPDATE")
                profiles = vectors.profiles(db)
                pending = profiles.get("pending")
                if pending is None or pending[0] != profile:
                    raise StoreError(f"{profile.describe()} is not the pending embedding profile")
                if _count_missing(db, pending[1]) > 0:
                    return False
                previous = profiles.get("active")
                db.run("DELETE FROM embedding_profiles WHERE role = 'active'")
                db.run("UPDATE embedding_profiles SET role = 'active' WHERE role = 'pending'")
            if previous is not None and previous[1] != pending[1]:
                schema.drop_table(db, previous[1])  # after the commit; an interrupted drop is cleaned up on open
            self._complete.clear()
            return True

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One read snapshot for every read this thread makes inside the block."""
        with self._transaction():
            yield

    def secondary_embedding_profile(self) -> EmbeddingProfile | None:
        return None  # not supported here (see set_secondary_embedding_profile)

    def set_secondary_embedding_profile(self, profile: EmbeddingProfile | None) -> None:
        """Not on seekdb yet: its vector tables carry an ``active`` flag every write keeps in step with the head, and
        a second table per store would need the same upkeep. The embedding reranker still works here with a second
        embedder, which embeds the candidates it has no stored vector for."""
        if profile is not None:
            raise CapabilityNotSupportedError(
                "a secondary embedding profile is not supported on the seekdb backend yet (DuckDB stores only); "
                "`--rerank-embedder` still works at search time, embedding the candidates in process")

    def warm(self, scope: str, *, vectors: bool = True) -> bool:
        """Nothing to load: seekdb answers searches itself (no in-process views)."""
        return self.find_memory(scope) is not None

    def vector_status(self, scope: str) -> VectorStatus:
        with self._transaction() as db:
            memory, active_count = _find_memory_with_count(db, scope)
            active = vectors.profiles(db).get("active")
            profile = active[0] if active else None
            if active is None or memory is None:
                return VectorStatus(memory=memory, profile=profile, complete=profile is not None)
            key = (memory.artifact_id, memory.revision, active[0])
            complete = self._complete.known_complete(key)
            if not complete:
                complete = vectors.active_count(db, active[1], memory.artifact_id) == active_count
                if complete:
                    self._complete.remember_complete(key)
        return VectorStatus(memory=memory, profile=profile, complete=complete)

    def versions_missing_vectors(self, profile: EmbeddingProfile, limit: int) -> list[tuple[str, str]]:
        with self._transaction() as db:
            table = self._require_table(db, profile)
            return [(version_id, text) for version_id, text in db.run(
                f"""SELECT h.entry_version_id, v.text FROM head_entries h
                    JOIN entry_versions v ON v.entry_version_id = h.entry_version_id
                    LEFT JOIN {table} t ON t.entry_version_id = h.entry_version_id
                    WHERE h.state = 'active' AND t.entry_version_id IS NULL
                    ORDER BY h.entry_version_id LIMIT {int(limit)}"""
            )]

    def count_missing_vectors(self, profile: EmbeddingProfile) -> int:
        with self._transaction() as db:
            return _count_missing(db, self._require_table(db, profile))

    def store_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        if not batch:
            return
        with self._write_lock, self._transaction() as db:
            table = self._table_for(db, profile)
            if table is not None:
                check_dimension(profile, batch)
                vectors.store(db, table, batch)

    def stored_vectors(self, profile: EmbeddingProfile, entry_version_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors stored under ``profile`` (active or pending) for these versions; missing ids are absent."""
        with self._transaction() as db:
            table = self._table_for(db, profile)
            return vectors.read(db, table, entry_version_ids) if table and entry_version_ids else {}

    def _require_table(self, db: Connection, profile: EmbeddingProfile) -> str:
        table = self._table_for(db, profile)
        if table is None:
            raise StoreError(f"{profile.describe()} is neither the active nor the pending embedding profile")
        return table

    # --- search -----------------------------------------------------------------------------------------------

    def candidates(
        self, scope: str, *, fts_terms: Sequence[str] | None, query_vector: np.ndarray | None, limit: int,
        with_versions: bool = True,
    ) -> ChannelCandidates:
        check_candidate_limit(limit)
        with self._transaction() as db:
            memory, active_count = _find_memory_with_count(db, scope)
            if memory is None:
                return ChannelCandidates(memory=None, fts=[], vector=[])
            fts = fulltext.search(db, memory.artifact_id, fts_terms, limit) if fts_terms is not None else []
            vector = []
            if query_vector is not None:
                active = vectors.profiles(db).get("active")
                if active is not None:
                    vector = vectors.search(db, active[1], memory.artifact_id, query_vector, limit, active_count)
            if not with_versions:
                return ChannelCandidates(memory=memory, fts=fts, vector=vector)
            return assemble_candidates(memory, fts, vector, self.entry_versions)  # joins this transaction

    # --- write support ----------------------------------------------------------------------------------------



def _profile_values(profile: EmbeddingProfile) -> tuple[Any, ...]:
    return (profile.model_id, int(profile.dimension), bool(profile.normalized))


def _count_missing(db: Connection, table: str) -> int:
    return int(db.run(
        f"""SELECT count(*) FROM head_entries h LEFT JOIN {table} t ON t.entry_version_id = h.entry_version_id
            WHERE h.state = 'active' AND t.entry_version_id IS NULL"""
    )[0][0])


def _find_memory(db: Connection, scope: str) -> MemoryRef | None:
    return _find_memory_with_count(db, scope)[0]


def _find_memory_with_count(db: Connection, scope: str) -> tuple[MemoryRef | None, int]:
    rows = db.run(render(
        "SELECT artifact_id, head_revision, active_count FROM memories WHERE scope_key = %s", schema.scope_key(scope)
    ))
    if not rows:
        return None, 0
    return MemoryRef(scope=scope, artifact_id=rows[0][0], revision=int(rows[0][1])), int(rows[0][2])


def _head_revision(db: Connection, artifact_id: str) -> int | None:
    rows = db.run(render("SELECT head_revision FROM memories WHERE artifact_id = %s", artifact_id))
    return int(rows[0][0]) if rows else None
