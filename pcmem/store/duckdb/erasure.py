"""Erasure on the DuckDB file: delete an entry's content, then make sure its bytes are gone from the file.

Deleting rows is not enough in DuckDB: a deleted row stays in its row group (only a delete mask changes) and a
checkpoint that rewrites a table frees the old blocks without overwriting them, so the text can be read back from
the file with ``strings``. :func:`reclaim` therefore (1) rewrites every table that held erased content into a fresh
table (only live rows are copied), (2) checkpoints, so the old blocks become free space and the WAL is emptied,
(3) fills exactly the free blocks with random bytes in a scratch table and checkpoints again, (4) drops it. What
remains in the file is live data and random bytes. Cost: O(store) — erasure is rare and explicit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb

from pcmem.store.duckdb import indexes
from pcmem.store.duckdb.arrow import registered
from pcmem.store.duckdb.fts_index import SCHEMA as FTS_SCHEMA
from pcmem.store.duckdb.vectors import TABLES as VECTOR_TABLES
from pcmem.types.memory import Tombstone

if TYPE_CHECKING:
    pass

_SCRATCH = "pcmem_scrub"
PENDING = "reclaim_pending"
_CHUNK = 64 * 1024  # random bytes per scratch row
_CHECKPOINT_WAIT = 10.0  # seconds to wait for other transactions of this process to finish


def erase(db: duckdb.DuckDBPyConnection, artifact_id: str, entry_ids: Sequence[str]) -> None:
    """Delete every version's text and metadata, and every vector, of these entries, and the reasons of the revisions
    that wrote them; drop index terms no document uses any more (the commit already removed their full-text
    documents). Runs inside the write transaction."""
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
    wanted = pa.table({"entry_id": pa.array(list(entry_ids), pa.string())})
    with registered(db, "pcmem_erased", wanted):
        versions = [v for (v,) in db.execute(
            "SELECT DISTINCT entry_version_id FROM entry_events JOIN pcmem_erased USING (entry_id) "
            "WHERE artifact_id = ?", [artifact_id]).fetchall()]
        db.execute("DELETE FROM entry_versions WHERE artifact_id = ? AND entry_id IN (SELECT entry_id FROM pcmem_erased)",
                   [artifact_id])
        # A write's reason often quotes the value it replaced ("corrected the phone from …"): the reason of every
        # revision that wrote one of these entries goes with them (for the revision's other entries too).
        db.execute("UPDATE revisions SET reason = NULL WHERE artifact_id = ? AND reason IS NOT NULL AND revision IN "
                   "(SELECT revision FROM entry_events JOIN pcmem_erased USING (entry_id) WHERE artifact_id = ?)",
                   [artifact_id, artifact_id])
    for table in _existing(db, VECTOR_TABLES.values()):
        db.execute(f"DELETE FROM {table} WHERE entry_version_id IN (SELECT unnest($ids))", {"ids": versions})
    db.execute(f"DELETE FROM {FTS_SCHEMA}.dict WHERE df <= 0")
    # Until reclaim() has run, the erased bytes may still be in the file: a reclaim that cannot finish now (another
    # thread held a transaction for longer than _CHECKPOINT_WAIT, a crash) is finished by the next open.
    db.execute("INSERT OR REPLACE INTO pcmem_meta VALUES (?, '1')", [PENDING])


def pending(db: duckdb.DuckDBPyConnection) -> bool:
    """Whether an erasure committed but its bytes were not reclaimed yet."""
    return db.execute("SELECT count(*) FROM pcmem_meta WHERE key = ?", [PENDING]).fetchone()[0] > 0


def tombstone(db: duckdb.DuckDBPyConnection, artifact_id: str, entry_id: str) -> Tombstone | None:
    row = db.execute(
        "SELECT e.revision, r.created_at FROM entry_events e JOIN revisions r USING (artifact_id, revision) "
        "WHERE e.artifact_id = ? AND e.entry_id = ? AND e.state = 'erased' ORDER BY e.revision LIMIT 1",
        [artifact_id, entry_id]).fetchone()
    if row is None:
        return None
    versions = db.execute(
        "SELECT entry_version_id FROM entry_events WHERE artifact_id = ? AND entry_id = ? "
        "GROUP BY entry_version_id ORDER BY min(revision)", [artifact_id, entry_id]).fetchall()
    from datetime import UTC

    return Tombstone(entry_id=entry_id, entry_version_ids=tuple(v for (v,) in versions), erased_in_revision=row[0],
                     erased_at=row[1].replace(tzinfo=UTC))


def _existing(db: duckdb.DuckDBPyConnection, tables: Sequence[str] | object) -> list[str]:
    present = {name for (name,) in db.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND database_name = current_database()"
    ).fetchall()}
    return [table for table in tables if table in present]  # type: ignore[union-attr]


def _rewrite(db: duckdb.DuckDBPyConnection, schema: str, table: str) -> None:
    """Replace ``schema.table`` by a fresh copy of its live rows (same definition, constraints and indexes included:
    DuckDB drops a table's indexes with it, and a lost lookup index makes every later write scan the table)."""
    (ddl,) = db.execute("SELECT sql FROM duckdb_tables() WHERE schema_name = ? AND table_name = ? "
                        "AND database_name = current_database()", [schema, table]).fetchone()
    table_indexes = indexes.definitions(db, schema, table)
    fresh = f"{table}__fresh"
    prefix = f"CREATE TABLE {schema}.{table}(" if ddl.startswith(f"CREATE TABLE {schema}.") else f"CREATE TABLE {table}("
    if not ddl.startswith(prefix):
        raise duckdb.CatalogException(f"unexpected definition of {schema}.{table}: {ddl[:80]}")
    db.execute(f"CREATE TABLE {schema}.{fresh}(" + ddl[len(prefix):])
    db.execute(f"INSERT INTO {schema}.{fresh} SELECT * FROM {schema}.{table}")
    db.execute(f"DROP TABLE {schema}.{table}")
    db.execute(f"ALTER TABLE {schema}.{fresh} RENAME TO {table}")
    for statement in table_indexes:
        db.execute(statement)


def _checkpoint(db: duckdb.DuckDBPyConnection) -> None:
    deadline = time.monotonic() + _CHECKPOINT_WAIT
    while True:
        try:
            db.execute("CHECKPOINT")
            return
        except duckdb.TransactionException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)  # another thread of this process is mid-transaction


def reclaim(db: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the tables erased rows lived in, checkpoint, and overwrite the free blocks with random bytes."""
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
    db.execute(f"DROP TABLE IF EXISTS {_SCRATCH}")  # left over by an interrupted reclaim
    db.execute("BEGIN TRANSACTION")
    try:
        _rewrite(db, "main", "entry_versions")
        # The erased reasons: DuckDB 1.5.5's checkpoint writes an updated column anew (the old blocks become free
        # and are overwritten below), but how a checkpoint stores an UPDATE is DuckDB's to change; a copy is not.
        _rewrite(db, "main", "revisions")
        _rewrite(db, FTS_SCHEMA, "dict")
        for table in _existing(db, VECTOR_TABLES.values()):
            _rewrite(db, "main", table)
        indexes.create(db)  # a rewritten table comes without its secondary indexes
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    _checkpoint(db)
    free, block_size = db.execute("SELECT free_blocks, block_size FROM pragma_database_size()").fetchone()
    rows = ((int(free) + 1) * int(block_size)) // _CHUNK + 1
    db.execute(f"CREATE TABLE {_SCRATCH} (junk BLOB)")
    batch = pa.table({"junk": pa.array([os.urandom(_CHUNK) for _ in range(rows)], pa.binary())})
    with registered(db, "pcmem_junk", batch):
        db.execute(f"INSERT INTO {_SCRATCH} SELECT junk FROM pcmem_junk")
    _checkpoint(db)
    db.execute(f"DROP TABLE {_SCRATCH}")
    db.execute("DELETE FROM pcmem_meta WHERE key = ?", [PENDING])
    _checkpoint(db)
