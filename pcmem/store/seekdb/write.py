"""One write to one scope of a seekdb store: the port's WriteTransaction, inside an open SQL transaction.

A commit inserts the revision, its new versions and entry events, then moves the projections for exactly the
entries it touches (O(change)): ``memories`` (head and counts), ``head_entries``, ``fts_docs`` and each profile's
vector ``active`` flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from pcmem.analysis import Analyzer
from pcmem.errors import ConcurrentWriteError, DuplicateKeyError, StoreError
from pcmem.store import common
from pcmem.store.common import (
    V_COLUMNS,
    RecordPruning,
    check_dimension,
    check_events,
    next_revision,
    utc,
    version_from_row,
)
from pcmem.store.seekdb import fulltext, schema, vectors
from pcmem.store.seekdb.sql import Connection, chunks, in_list, insert_rows, quote, render, row
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import EntryVersion, MemoryRef, Operation
from pcmem.types.storage import EntryEvent, HeadEntry, WriteRecord
from pcmem.validation import canonical_json


class SeekdbWrite:
    """A :class:`~pcmem.store.port.WriteTransaction` inside an open seekdb transaction (see SeekdbBackend.write)."""

    def __init__(self, db: Connection, scope: str, memory: MemoryRef | None, analyzer: Analyzer,
                 pruning: RecordPruning | None = None) -> None:
        self._db = db
        self._pruning = pruning or RecordPruning()
        self._scope = scope
        self.analyzer = analyzer
        self.memory = memory
        self._committed = False

    def head_entry(self, entry_id: str) -> HeadEntry | None:
        if self.memory is None:
            return None
        rows = self._db.run(render(
            f"""SELECT h.state, {V_COLUMNS} FROM head_entries h
                JOIN entry_versions v ON v.entry_version_id = h.entry_version_id
                WHERE h.artifact_id = %s AND h.entry_id = %s""",
            self.memory.artifact_id, entry_id,
        ))
        return HeadEntry(version=version_from_row(rows[0][1:]), state=rows[0][0]) if rows else None

    def existing_entry_ids(self, entry_ids: Sequence[str]) -> set[str]:
        if self.memory is None or not entry_ids:
            return set()
        found: set[str] = set()
        for batch in chunks(list(entry_ids)):
            found.update(r[0] for r in self._db.run(
                f"SELECT entry_id FROM head_entries WHERE artifact_id = {quote(self.memory.artifact_id)} "
                f"AND entry_id IN {in_list(batch)}"
            ))
        return found

    def recorded_write(self, key: str) -> WriteRecord | None:
        # A locking read: it sees what another process committed after this repeatable-read transaction began (the
        # same write sent to two processes at once: the second waits for the scope's row lock, then finds the record)
        rows = self._db.run(render("SELECT scope, operation, fingerprint, outcome, recorded_at FROM recorded_writes "
                                   "WHERE idempotency_key = %s FOR UPDATE", key))
        if not rows:
            return None
        scope, operation, fingerprint, outcome, recorded_at = rows[0]
        return WriteRecord(key=key, scope=scope, operation=operation, fingerprint=fingerprint, outcome=outcome,
                           recorded_at=utc(recorded_at))

    def record_write(self, record: WriteRecord) -> None:
        try:
            self._db.run("INSERT INTO recorded_writes VALUES " + row(
                record.key, record.scope, record.operation, record.fingerprint, record.outcome, record.recorded_at))
        except DuplicateKeyError:
            # another process recorded the key after this write looked: run it again, and it finds the record
            raise ConcurrentWriteError(f"another writer recorded idempotency_key {record.key!r} at the same moment; "
                                       "retry") from None
        if self._pruning.due():
            self._prune(record.recorded_at)

    def _prune(self, now: datetime) -> None:
        """Drop the records past their keeping time (see pcmem.store.common): MySQL cannot delete from a table
        with a subquery on it, so the cutoff of the newest RECORDS_KEPT_AT_MOST is read first."""
        expired, young = common.prune_cutoffs(now)
        newest = self._db.run(f"SELECT recorded_at FROM recorded_writes ORDER BY recorded_at DESC "
                              f"LIMIT 1 OFFSET {int(common.RECORDS_KEPT_AT_MOST)}")
        beyond = ""  # the records past the newest RECORDS_KEPT_AT_MOST, but none younger than ``young``
        if newest:
            cap = utc(newest[0][0])
            beyond = render(" OR recorded_at <= %s", cap) if cap < young else render(" OR recorded_at < %s", young)
        self._db.run(render("DELETE FROM recorded_writes WHERE recorded_at < %s", expired) + beyond)

    def erase(self, entry_ids: Sequence[str]) -> None:
        """Delete every version's text/metadata and every vector of these entries, and the reasons of the revisions
        that wrote them (their events stay: the tombstone). The commit already removed their full-text documents."""
        if self.memory is None:
            raise StoreError("nothing to erase in a scope with no memory")
        db, artifact = self._db, quote(self.memory.artifact_id)
        for batch in chunks(list(entry_ids)):
            versions = [r[0] for r in db.run(
                f"SELECT DISTINCT entry_version_id FROM entry_events WHERE artifact_id = {artifact} "
                f"AND entry_id IN {in_list(batch)}")]
            db.run(f"DELETE FROM entry_versions WHERE artifact_id = {artifact} AND entry_id IN {in_list(batch)}")
            # the reasons of the revisions that wrote them (a reason often quotes the value it replaced)
            db.run(f"UPDATE revisions SET reason = NULL WHERE artifact_id = {artifact} AND reason IS NOT NULL AND "
                   f"revision IN (SELECT revision FROM entry_events WHERE artifact_id = {artifact} "
                   f"AND entry_id IN {in_list(batch)})")
            for table in dict.fromkeys(vectors.profile_tables(db).values()):
                for ids in chunks(versions):
                    db.run(f"DELETE FROM {table} WHERE entry_version_id IN {in_list(ids)}")

    def embedding_profile(self) -> EmbeddingProfile | None:
        return self._active_profile()

    def _active_profile(self) -> EmbeddingProfile | None:
        active = vectors.profiles(self._db).get("active")
        return active[0] if active else None

    def secondary_embedding_profile(self) -> EmbeddingProfile | None:
        return None  # seekdb keeps no secondary profile (SeekdbBackend.set_secondary_embedding_profile)

    def store_secondary_vectors(self, profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
        return None  # dropped: there is no secondary profile to store them under

    def missing_vectors(self, entry_version_ids: Sequence[str]) -> set[str]:
        table = vectors.profile_tables(self._db).get("active")
        return vectors.missing(self._db, table, entry_version_ids)

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
        """As the port; ``artifact_id`` names a new memory (``pcmem migrate`` keeps the source's ids)."""
        if self._committed:
            raise StoreError("a write transaction commits at most once")
        self._committed = True
        db = self._db
        artifact_id, revision = next_revision(self._scope, self.memory, artifact_id)
        check_events(events, new_versions, self._stored_version_ids)
        touched = [event.entry_id for event in events]
        previous: dict[str, tuple[str, str]] = {}  # entry_id -> (version id, state) at the old head
        if self.memory is not None:
            for batch in chunks(touched):
                for entry_id, version_id, state in db.run(
                    f"SELECT entry_id, entry_version_id, state FROM head_entries "
                    f"WHERE artifact_id = {quote(artifact_id)} AND entry_id IN {in_list(batch)}"
                ):
                    previous[entry_id] = (version_id, state)
        delta = {"active": 0, "retired": 0, "erased": 0}
        for event in events:
            if event.entry_id in previous:
                delta[previous[event.entry_id][1]] -= 1
            delta[event.state] += 1
        self._write_memory_row(artifact_id, revision, now, delta)
        db.run("INSERT INTO revisions (artifact_id, revision, operation, change_count, created_at, reason) VALUES "
               + row(artifact_id, revision, operation, len(events), now, reason))
        insert_rows(db, "INSERT INTO entry_versions", [
            row(v.entry_version_id, artifact_id, v.entry_id, v.version, v.kind, v.text, v.content_hash,
                canonical_json(v.metadata), revision, v.created_at)  # the write's time, or an imported entry's
            for v in new_versions
        ])
        insert_rows(db, "INSERT INTO entry_events",
                    [row(artifact_id, revision, e.entry_id, e.entry_version_id, e.state) for e in events])
        self._move_projections(artifact_id, new_versions, events, previous, vectors_by_version or {})
        insert_rows(db, "INSERT INTO head_entries",
                    [row(artifact_id, e.entry_id, e.entry_version_id, e.state) for e in events],
                    "ON DUPLICATE KEY UPDATE entry_version_id = VALUES(entry_version_id), state = VALUES(state)")
        self.memory = MemoryRef(scope=self._scope, artifact_id=artifact_id, revision=revision)
        return self.memory

    def _stored_version_ids(self, entry_version_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for batch in chunks(list(entry_version_ids)):
            found.update(r[0] for r in self._db.run(
                f"SELECT entry_version_id FROM entry_versions WHERE entry_version_id IN {in_list(batch)}"
            ))
        return found

    def _write_memory_row(self, artifact_id: str, revision: int, now: datetime, delta: dict[str, int]) -> None:
        db = self._db
        if self.memory is None:
            try:
                db.run("INSERT INTO memories VALUES " + row(
                    artifact_id, schema.scope_key(self._scope), self._scope, revision, delta["active"],
                    delta["retired"], now, now))
            except DuplicateKeyError:
                # Another process created the scope after this write read it: a compare-and-swap conflict.
                raise ConcurrentWriteError(
                    f"scope {self._scope!r} was created by another writer meanwhile", expected=0, actual=None
                ) from None
        else:
            db.run(render(
                "UPDATE memories SET head_revision = %s, updated_at = %s, active_count = active_count + %s, "
                "retired_count = retired_count + %s WHERE artifact_id = %s",
                revision, now, delta["active"], delta["retired"], artifact_id,
            ))

    def _move_projections(
        self,
        artifact_id: str,
        new_versions: Sequence[EntryVersion],
        events: Sequence[EntryEvent],
        previous: Mapping[str, tuple[str, str]],
        vectors_by_version: Mapping[str, np.ndarray],
    ) -> None:
        """Full-text docs and vector flags follow the head: the touched entries' old active versions leave, the
        versions becoming active join. Nothing else is touched (O(change))."""
        db = self._db
        leaving = [version_id for version_id, state in previous.values() if state == "active"]
        joining = [e.entry_version_id for e in events if e.state == "active"]
        for batch in chunks(leaving):
            db.run(f"DELETE FROM fts_docs WHERE entry_version_id IN {in_list(batch)}")
        texts = {v.entry_version_id: (v.entry_id, v.text) for v in new_versions}
        unknown = [version_id for version_id in joining if version_id not in texts]
        for batch in chunks(unknown):  # reactivated versions: their text is already stored
            for version_id, entry_id, text in db.run(
                f"SELECT entry_version_id, entry_id, text FROM entry_versions WHERE entry_version_id IN {in_list(batch)}"
            ):
                texts[version_id] = (entry_id, text)
        insert_rows(db, "INSERT INTO fts_docs (entry_version_id, artifact_id, entry_id, body)", [
            row(version_id, artifact_id, texts[version_id][0], fulltext.body(texts[version_id][1], self.analyzer))
            for version_id in joining
        ])
        tables = vectors.profile_tables(db)
        for table in dict.fromkeys(tables.values()):
            vectors.set_active(db, table, leaving, False)
        active_table = tables.get("active")
        if active_table is not None and vectors_by_version:
            profile = self._active_profile()
            assert profile is not None  # an active vector table belongs to the active profile
            check_dimension(profile, vectors_by_version)
            vectors.store(db, active_table, vectors_by_version)  # reads the head before it moves: fix flags below
        for table in dict.fromkeys(tables.values()):
            vectors.set_active(db, table, joining, True)
