"""The write transaction of the DuckDB backend: what one revision inserts, and how it moves the head rows and the
search projections (full-text index, vectors) in the same DuckDB transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import duckdb

from pcmem.analysis import Analyzer
from pcmem.errors import StoreError
from pcmem.store.common import V_COLUMNS, RecordPruning, check_events, next_revision, version_from_row
from pcmem.store.duckdb import connection, erasure, fts_index, rows, vectors, write_records
from pcmem.store.duckdb.arrow import registered
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import EntryVersion, MemoryRef, Operation
from pcmem.types.storage import EntryEvent, HeadEntry, WriteRecord
from pcmem.validation import canonical_json

if TYPE_CHECKING:
    import numpy as np


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None)


HeadRow = tuple[int, str, str]  # (rowid, entry_version_id, state) of an entry's row in head_entries


def opening_sql(scope: str) -> str:
    """The scope's head and every embedding profile by role, in one statement: what a write transaction reads first
    (run with its ``BEGIN``, see Transactions.open; :func:`opened` reads the answer).

    A ``UNION ALL`` of two index-free reads with the scope as a literal: cheaper than the same rows as one outer
    join with a bound parameter (DuckDB plans the join; the client binds the parameter)."""
    return ("SELECT true, artifact_id, head_revision, NULL, NULL, NULL, NULL FROM memories "
            f"WHERE scope = {connection.literal(scope)} "
            "UNION ALL SELECT false, NULL, NULL, role, model_id, dimension, normalized FROM embedding_profile")


def opened(cursor: duckdb.DuckDBPyConnection, scope: str) -> tuple[MemoryRef | None, dict[str, EmbeddingProfile]]:
    """The answer of :func:`opening_sql`, waiting on ``cursor``: the scope's head and the profiles by role."""
    found = cursor.fetchall()
    memory = next((MemoryRef(scope=scope, artifact_id=artifact_id, revision=revision)
                   for is_memory, artifact_id, revision, *_ in found if is_memory), None)
    profiles = {role: EmbeddingProfile(model_id=model_id, dimension=dimension, normalized=normalized)
                for is_memory, _, _, role, model_id, dimension, normalized in found if not is_memory and role is not None}
    return memory, profiles


class DuckDBWrite:
    """A :class:`~pcmem.store.port.WriteTransaction` inside an open DuckDB transaction (see DuckDBBackend.write).

    A point write (a remember of a few entries, a revise) runs a few cheap statements: the scope's head and the
    embedding profiles are read once (:func:`opening_sql`, with the ``BEGIN``, handed in), each head row once (kept
    in ``_heads`` until the commit moves them), texts this write carries are never read back, and the rows it adds
    are literals (:mod:`.rows`). The commit's statements whose results nobody reads wait in ``_pending`` and run
    together (:func:`rows.run_together`) ahead of the next read, in its call, and at the commit's end: a remember of
    one entry makes 4 calls into DuckDB for its ~14 statements."""

    def __init__(
        self, cursor: duckdb.DuckDBPyConnection, scope: str, memory: MemoryRef | None, analyzer: Analyzer,
        forget_cached_versions: Callable[[], None], profiles: dict[str, EmbeddingProfile] | None = None,
        id_floor: fts_index.IdFloor | None = None, pruning: RecordPruning | None = None,
    ) -> None:
        self.analyzer = analyzer
        self._pruning = pruning or RecordPruning()
        self._forget_cached_versions = forget_cached_versions
        self._cursor = cursor
        self._scope = scope
        self.memory = memory
        self._committed = False
        #: Embedding profiles by role as this transaction sees them (no write of this transaction changes them).
        self._profiles = profiles
        self._id_floor = id_floor
        #: Head rows read in this transaction, by entry id (``None``: the entry has no head row), until commit.
        self._heads: dict[str, HeadRow | None] = {}
        #: Write statements of the commit not run yet (see :meth:`_flush`).
        self._pending: list[str] = []

    def _flush(self) -> None:
        """Run the pending write statements, in order: before any read of this transaction (so every read sees
        every write before it; the index lookup takes them into its own call instead) and at the commit's end."""
        statements, self._pending = self._pending, []
        rows.run_together(self._cursor, statements)

    def _profile(self, role: vectors.Role = "active") -> EmbeddingProfile | None:
        if self._profiles is None:
            self._flush()
            self._profiles = {role: found for role in vectors.TABLES
                              if (found := vectors.profile(self._cursor, role)) is not None}
        return self._profiles.get(role)

    def head_entry(self, entry_id: str) -> HeadEntry | None:
        if self.memory is None:
            return None
        row = self._cursor.execute(
            f"""
            SELECT h.rowid, h.state, {V_COLUMNS}
            FROM head_entries h JOIN entry_versions v USING (entry_version_id)
            WHERE h.artifact_id = ? AND h.entry_id = ?
            """,
            [self.memory.artifact_id, entry_id],
        ).fetchone()
        if row is None:
            return None
        head = HeadEntry(version=version_from_row(row[2:]), state=row[1])
        self._heads[entry_id] = (row[0], head.version.entry_version_id, head.state)
        return head

    def _head_rows(self, artifact_id: str, entry_ids: Sequence[str]) -> dict[str, HeadRow]:
        """entry_id → (rowid, entry_version_id, state) of these entries' head rows, by an index scan on entry_id (a
        second filter would make DuckDB scan the table, so the scope is checked here). Rows this transaction read
        before are not read again; a memory this write creates has none."""
        unknown = [entry_id for entry_id in dict.fromkeys(entry_ids) if entry_id not in self._heads]
        if unknown and self.memory is not None and self.memory.artifact_id == artifact_id:
            self._flush()
            found = self._cursor.execute(
                "SELECT rowid, artifact_id, entry_id, entry_version_id, state FROM head_entries "
                f"WHERE entry_id IN {connection.in_list(unknown)}"
            ).fetchall()
            self._heads.update(dict.fromkeys(unknown))
            self._heads.update({entry_id: (rowid, version_id, state)
                                for rowid, artifact, entry_id, version_id, state in found if artifact == artifact_id})
        heads = {entry_id: self._heads.get(entry_id) for entry_id in entry_ids}
        return {entry_id: head for entry_id, head in heads.items() if head is not None}

    def existing_entry_ids(self, entry_ids: Sequence[str]) -> set[str]:
        if self.memory is None or not entry_ids:
            return set()
        if len(entry_ids) <= fts_index.POINT_WRITES:
            return set(self._head_rows(self.memory.artifact_id, entry_ids))
        import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
        wanted = pa.table({"entry_id": pa.array(list(entry_ids), pa.string())})
        with registered(self._cursor, "pcmem_wanted", wanted):
            rows = self._cursor.execute(
                "SELECT h.entry_id FROM head_entries h JOIN pcmem_wanted w USING (entry_id) WHERE h.artifact_id = ?",
                [self.memory.artifact_id],
            ).fetchall()
        return {entry_id for (entry_id,) in rows}

    def embedding_profile(self) -> EmbeddingProfile | None:
        return self._profile()

    def recorded_write(self, key: str) -> WriteRecord | None:
        self._flush()
        row = self._cursor.execute(write_records.lookup_sql(key)).fetchone()
        return None if row is None else write_records.from_row(key, row)

    def record_write(self, record: WriteRecord) -> None:
        self._pending.append(write_records.insert_sql(record))
        if self._pruning.due():
            self._pending.append(write_records.prune_sql(record.recorded_at))
        self._flush()

    def erase(self, entry_ids: Sequence[str]) -> None:
        if self.memory is None:
            raise StoreError("nothing to erase in a scope with no memory")
        erasure.erase(self._cursor, self.memory.artifact_id, entry_ids)
        self._heads.clear()
        self._forget_cached_versions()  # erased text must not outlive the erasure in this process's memory

    def missing_vectors(self, entry_version_ids: Sequence[str]) -> set[str]:
        if self._profile() is None:
            return set(entry_version_ids)
        return vectors.missing(self._cursor, entry_version_ids)

    def secondary_embedding_profile(self) -> EmbeddingProfile | None:
        return self._profile("secondary")

    def store_secondary_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        if batch and profile == self._profile("secondary"):
            vectors.store(self._cursor, batch, vectors.TABLES["secondary"])

    def commit(
        self,
        operation: Operation,
        new_versions: Sequence[EntryVersion],
        events: Sequence[EntryEvent],
        now: datetime,
        vectors_by_version: Mapping[str, np.ndarray] | None = None,
        artifact_id: str | None = None,
        reason: str | None = None,
    ) -> MemoryRef:
        if self._committed:
            raise StoreError("a write transaction commits at most once")
        self._committed = True
        artifact_id, revision = next_revision(self._scope, self.memory, artifact_id)
        check_events(events, new_versions, self._stored_version_ids)
        stamp = _naive_utc(now)
        self._write_memory_row(artifact_id, revision, stamp)
        self._pending.append(
            "INSERT INTO revisions (artifact_id, revision, operation, change_count, created_at, reason) VALUES "
            + rows.values([(artifact_id, revision, operation, len(events), stamp, reason)]))
        self._insert_versions(artifact_id, revision, new_versions)
        texts = {version.entry_version_id: version.text for version in new_versions}
        # A first version starts its entry: the memory layer numbers a version 1 only where the entry has no head row
        # (a new id, or the next generation of a forgotten key; memory/upsert.py), so there is no row to look up.
        started = {version.entry_id for version in new_versions if version.version == 1}
        self._apply_events(artifact_id, revision, events, vectors_by_version or {}, texts, started)
        self._flush()
        self._heads.clear()  # moved: a later read in this transaction must look again
        self.memory = MemoryRef(scope=self._scope, artifact_id=artifact_id, revision=revision)
        return self.memory

    def _stored_version_ids(self, entry_version_ids: Sequence[str]) -> set[str]:
        import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
        wanted = pa.table({"entry_version_id": pa.array(list(entry_version_ids), pa.string())})
        with registered(self._cursor, "pcmem_wanted_versions", wanted):
            rows = self._cursor.execute(
                "SELECT entry_version_id FROM entry_versions JOIN pcmem_wanted_versions USING (entry_version_id)"
            ).fetchall()
        return {version_id for (version_id,) in rows}

    def _write_memory_row(self, artifact_id: str, revision: int, stamp: datetime) -> None:
        if revision == 1:
            self._pending.append("INSERT INTO memories VALUES " + rows.values([(artifact_id, self._scope, revision,
                                                                                 stamp, stamp)]))
        else:
            self._pending.append(f"UPDATE memories SET head_revision = {int(revision)}, updated_at = "
                                 f"{rows.sql_value(stamp)} WHERE artifact_id = {connection.literal(artifact_id)}")

    def _insert_versions(self, artifact_id: str, revision: int, new_versions: Sequence[EntryVersion]) -> None:
        if not new_versions:
            return
        if len(new_versions) <= fts_index.POINT_WRITES:
            self._pending.append("INSERT INTO entry_versions VALUES " + rows.values(
                (v.entry_version_id, artifact_id, v.entry_id, v.version, v.kind, v.text, v.content_hash,
                 canonical_json(v.metadata), revision, _naive_utc(v.created_at)) for v in new_versions))
            return
        self._flush()
        import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
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
                # A version's own time: the write's, or an imported entry's date (NewEntry.created_at).
                "created_at": pa.array([_naive_utc(v.created_at) for v in new_versions], pa.timestamp("us")),
            }
        )
        with registered(self._cursor, "pcmem_versions", versions):
            self._cursor.execute("INSERT INTO entry_versions SELECT * FROM pcmem_versions")

    def _apply_events(
        self, artifact_id: str, revision: int, events: Sequence[EntryEvent], vectors_by_version: Mapping[str, np.ndarray],
        texts: Mapping[str, str], started: set[str],
    ) -> None:
        """Log the events, move the search projections, then the head rows of the touched entries (O(change)).
        ``texts``: the texts of the versions this commit writes, by version id (not read back for the index);
        ``started``: the entries this commit starts (no head row yet)."""
        cursor = self._cursor
        if len(events) <= fts_index.POINT_WRITES:
            self._pending.append("INSERT INTO entry_events VALUES " + rows.values(
                (artifact_id, revision, e.entry_id, e.entry_version_id, e.state) for e in events))
            self._move_heads_by_lookups(artifact_id, events, vectors_by_version, texts, started)
            return
        self._flush()
        import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
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
                               vectors_by_version: Mapping[str, np.ndarray], texts: Mapping[str, str],
                               started: set[str]) -> None:
        """What :meth:`_update_search_projections` and the head moves below do, for a few events: every row is found
        through an index (head rows by entry id, versions by primary key) and changed by rowid, so a write costs
        the same in a store of 1,000 or 1,000,000 entries."""
        cursor = self._cursor
        heads = self._head_rows(artifact_id, [e.entry_id for e in events if e.entry_id not in started])
        retired = [version_id for _, version_id, state in heads.values() if state == "active"]
        if retired:
            self._flush()
            fts_index.remove_documents(cursor, retired)
        activated = [e.entry_version_id for e in events if e.state == "active"]
        documents = [(version_id, texts[version_id]) for version_id in activated if version_id in texts]
        stored = [version_id for version_id in activated if version_id not in texts]  # made active again
        if stored:
            self._flush()
            documents += cursor.execute(f"SELECT entry_version_id, text FROM entry_versions WHERE entry_version_id IN "
                                        f"{connection.in_list(stored)}").fetchall()
        if documents:  # the index lookup runs after the pending statements, in the same call
            before, self._pending = self._pending, []
            self._pending += fts_index.point_additions(cursor, documents, self.analyzer,
                                                       self._id_floor or fts_index.IdFloor(), before)
        if vectors_by_version and self._profile() is not None:  # none stored yet: see _store_vectors
            self._pending.append(vectors.point_insert(vectors_by_version, replace=False))
        moved = [e for e in events if e.entry_id in heads]
        if moved:
            rowids = ", ".join(str(heads[e.entry_id][0]) for e in moved)
            version_case = " ".join(f"WHEN {heads[e.entry_id][0]} THEN {connection.literal(e.entry_version_id)}"
                                    for e in moved)
            state_case = " ".join(f"WHEN {heads[e.entry_id][0]} THEN {connection.literal(e.state)}" for e in moved)
            self._pending.append(f"UPDATE head_entries SET entry_version_id = CASE rowid {version_case} END, "
                                 f"state = CASE rowid {state_case} END WHERE rowid IN ({rowids})")
        if len(moved) < len(events):
            self._pending.append("INSERT INTO head_entries VALUES " + rows.values(
                (artifact_id, e.entry_id, e.entry_version_id, e.state) for e in events if e.entry_id not in heads))

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
        fts_index.add_documents(cursor, becoming_active, self.analyzer, self._id_floor)
        self._store_vectors(vectors_by_version)

    def _store_vectors(self, vectors_by_version: Mapping[str, np.ndarray]) -> None:
        """The active vectors of a commit: its new versions' and those of versions made active again that had none
        (:meth:`missing_vectors`, in this transaction), so none is stored yet and a plain insert does."""
        if vectors_by_version and self._profile() is not None:
            vectors.store(self._cursor, vectors_by_version, replace=False)
