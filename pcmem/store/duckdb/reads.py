"""The DuckDB backend's read SQL, as plain functions over a cursor in an open transaction (the backend picks the
transaction; these only ask). Each returns pcmem's types, never driver rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb

from pcmem.errors import StoreError
from pcmem.store.common import V_COLUMNS, entry, utc, version_from_row
from pcmem.store.duckdb import connection, vectors
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import (
    Change,
    EntryVersion,
    HistoryEvent,
    MemoryEntry,
    MemoryRef,
    RevisionInfo,
    ScopeSummary,
)

if TYPE_CHECKING:
    import numpy as np

Cursor = duckdb.DuckDBPyConnection


def meta(cursor: Cursor, key: str) -> str | None:
    row = cursor.execute("SELECT value FROM pcmem_meta WHERE key = ?", [key]).fetchone()
    return None if row is None else str(row[0])


def find_memory(cursor: Cursor, scope: str) -> MemoryRef | None:
    row = cursor.execute("SELECT artifact_id, head_revision FROM memories WHERE scope = ?", [scope]).fetchone()
    return None if row is None else MemoryRef(scope=scope, artifact_id=row[0], revision=row[1])


def head_and_profile(cursor: Cursor, scope: str | None) -> tuple[MemoryRef | None, EmbeddingProfile | None]:
    """The scope's head and the active embedding profile, in one statement (a search reads both per snapshot)."""
    row = cursor.execute(
        "SELECT m.artifact_id, m.head_revision, p.model_id, p.dimension, p.normalized "
        "FROM (SELECT 1) LEFT JOIN memories m ON m.scope = ? "
        "LEFT JOIN embedding_profile p ON p.role = 'active'",
        [scope],
    ).fetchone()
    memory = None if row[0] is None else MemoryRef(scope=scope or "", artifact_id=row[0], revision=row[1])
    profile = None if row[2] is None else EmbeddingProfile(model_id=row[2], dimension=row[3], normalized=row[4])
    return memory, profile


def scope_summaries(cursor: Cursor) -> list[ScopeSummary]:
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


def revisions(cursor: Cursor, memory: MemoryRef, since: int = 0) -> list[RevisionInfo]:
    rows = cursor.execute(
        "SELECT revision, operation, created_at, change_count, reason FROM revisions "
        "WHERE artifact_id = ? AND revision > ? AND revision <= ? ORDER BY revision",
        [memory.artifact_id, since, memory.revision],
    ).fetchall()
    return [
        RevisionInfo(revision=rev, operation=op, created_at=utc(at), change_count=count, reason=reason)
        for rev, op, at, count, reason in rows
    ]


def manifest(cursor: Cursor, memory: MemoryRef, *, include_retired: bool, after: str = "",
             limit: int | None = None) -> list[MemoryEntry]:
    """The revision's entries in entry-id order: those after ``after`` only, at most ``limit``. The bounds are in
    the SQL, so a page builds only its own entry objects (building them, not the query, is most of a 10,000-entry
    read); the head is read from its projection, ``head_entries``, a past revision from the event log."""
    states = ["active", "retired"] if include_retired else ["active"]
    bounds: dict[str, object] = {"artifact": memory.artifact_id, "states": states, "after": after, "limit": limit}
    row = cursor.execute("SELECT head_revision FROM memories WHERE artifact_id = ?", [memory.artifact_id]).fetchone()
    standing = _HEAD_STANDING if row is not None and row[0] == memory.revision else _PAST_STANDING
    if standing is _PAST_STANDING:
        bounds["revision"] = memory.revision
    rows = cursor.execute(
        f"""
        WITH standing AS ({standing})
        SELECT s.state, {V_COLUMNS}
        FROM standing s JOIN entry_versions v USING (entry_version_id)
        WHERE s.state IN $states ORDER BY v.entry_id LIMIT $limit
        """,
        bounds,
    ).fetchall()
    return [entry(memory, row[0], version_from_row(row[1:])) for row in rows]


#: Each entry's version and state in one revision, for entry ids after ``$after`` (DuckDB compares text by its
#: bytes, as :mod:`pcmem.memory.paging` does); ``LIMIT NULL`` is no limit.
_HEAD_STANDING = ("SELECT entry_id, entry_version_id, state FROM head_entries "
                  "WHERE artifact_id = $artifact AND entry_id > $after")
_PAST_STANDING = """
    SELECT entry_id, arg_max(entry_version_id, revision) AS entry_version_id, arg_max(state, revision) AS state
    FROM entry_events WHERE artifact_id = $artifact AND revision <= $revision AND entry_id > $after
    GROUP BY entry_id
"""


def entry_in_revision(cursor: Cursor, memory: MemoryRef, entry_id: str) -> MemoryEntry | None:
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


def changes(cursor: Cursor, memory: MemoryRef, since_revision: int) -> list[Change]:
    rows = cursor.execute(
        """
        SELECT e.revision, r.operation, e.entry_id, e.entry_version_id, e.state, r.reason
        FROM entry_events e JOIN revisions r USING (artifact_id, revision)
        WHERE e.artifact_id = ? AND e.revision > ? AND e.revision <= ?
        ORDER BY e.revision, e.entry_id
        """,
        [memory.artifact_id, since_revision, memory.revision],
    ).fetchall()
    return [
        Change(revision=rev, operation=op, entry_id=entry_id, entry_version_id=version_id, state=state, reason=reason)
        for rev, op, entry_id, version_id, state, reason in rows
    ]


def history(cursor: Cursor, memory: MemoryRef, entry_id: str) -> list[HistoryEvent]:
    rows = cursor.execute(
        f"""
        SELECT e.revision, r.operation, e.state, r.created_at, r.reason,
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
        HistoryEvent(revision=row[0], operation=row[1], state=row[2], created_at=utc(row[3]), reason=row[4],
                     entry=version_from_row(row[5:]))
        for row in rows
    ]


def entry_versions(cursor: Cursor, entry_version_ids: Sequence[str]) -> dict[str, EntryVersion]:
    # A search page needs at most ~130 versions: an IN list of literals is an index scan of the primary key.
    rows = cursor.execute(
        f"SELECT {V_COLUMNS} FROM entry_versions v WHERE entry_version_id IN {connection.in_list(entry_version_ids)}",
    ).fetchall()
    return {row[0]: version_from_row(row) for row in rows}


def vector_table(cursor: Cursor, profile: EmbeddingProfile) -> str:
    """The table holding ``profile``'s vectors; StoreError unless it is the active, pending or secondary profile."""
    table = vectors.table_for(cursor, profile)
    if table is None:
        raise StoreError(f"{profile.describe()} is not the active, pending or secondary embedding profile")
    return table


def versions_missing_vectors(cursor: Cursor, profile: EmbeddingProfile, limit: int) -> list[tuple[str, str]]:
    """(entry_version_id, text) of up to ``limit`` active versions without a vector of ``profile``, in id order."""
    table = vector_table(cursor, profile)
    return cursor.execute(
        "SELECT v.entry_version_id, v.text FROM head_entries h JOIN entry_versions v USING (entry_version_id) "
        f"ANTI JOIN {table} e USING (entry_version_id) WHERE h.state = 'active' "
        "ORDER BY v.entry_version_id LIMIT ?",
        [limit],
    ).fetchall()


def stored_vectors(cursor: Cursor, profile: EmbeddingProfile,
                   entry_version_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """The stored vectors of ``profile`` for these versions (none when it is not a profile the store keeps)."""
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    if (table := vectors.table_for(cursor, profile)) is None:
        return {}
    rows = cursor.execute(
        f"SELECT entry_version_id, vec FROM {table} WHERE entry_version_id IN (SELECT unnest($ids))",
        {"ids": list(entry_version_ids)},
    ).fetchall()
    return {version_id: np.asarray(vec, dtype=np.float32) for version_id, vec in rows}
