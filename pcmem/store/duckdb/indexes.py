"""pcmem's secondary ART indexes: the one list of them, their rebuild, and the check that DuckDB kept their rows.

Why a check: DuckDB 1.5.5 can lose rows of an index made with ``CREATE INDEX`` after an unclean exit. Replaying a
write-ahead log leaves such an index *unbound*, its replayed inserts buffered beside it; a checkpoint that runs
without a client context — the one DuckDB runs when the last connection closes — writes the index's storage from
before the log and drops the buffer (duckdb/duckdb#23788, fixed upstream after 1.5.5 by PR #23848 / #25771). The
next process then misses those rows in every index lookup: a revise finds no head row for the entry, inserts one and
hits the primary key ("Duplicate key … violates primary key constraint"); a delete cannot find the rows in the index
("FATAL Error: Failed to delete all rows from index"). Primary-key and unique indexes are bound eagerly during replay
and are not affected.

pcmem prevents the loss at its cause — :func:`pcmem.store.duckdb.connection.connect` checkpoints from a client
context right after a replay, which binds every index first — and cures files damaged before (migration 0007, and
``pcmem check --repair``) by rebuilding these indexes. :func:`verify` finds a damaged one: each index is asked, key
batch by key batch, for the rows a table scan counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from pcmem.store.duckdb.connection import literal, qualified_tables
from pcmem.store.duckdb.fts_index import SCHEMA as FTS


@dataclass(frozen=True, slots=True)
class SecondaryIndex:
    name: str
    schema: str
    table: str
    column: str  # single-column only: DuckDB 1.5 uses no multi-column ART index for a scan

    @property
    def qualified_table(self) -> str:
        return f"{self.schema}.{self.table}"


#: Every secondary index a current store has. Point lookups by entry id, term, term id, document name and document id
#: use them instead of scanning a store-wide column (see connection.in_list).
SECONDARY: tuple[SecondaryIndex, ...] = (
    SecondaryIndex("head_entries_by_entry", "main", "head_entries", "entry_id"),
    SecondaryIndex("fts_dict_by_term", FTS, "dict", "term"),
    SecondaryIndex("fts_dict_by_termid", FTS, "dict", "termid"),
    SecondaryIndex("fts_docs_by_name", FTS, "docs", "name"),
    SecondaryIndex("fts_terms_by_doc", FTS, "terms", "docid"),
)

#: Created by migration 0001 and dropped by 0007: DuckDB 1.5 never scans through a two-column ART index, so it only
#: cost every write, and it could be damaged like the others.
RETIRED = ("entry_events_by_revision",)

_BATCH = 2_000  # keys per lookup statement
_SMALL_TABLE = 2_048  # DuckDB's default index_scan_max_count


def create(db: duckdb.DuckDBPyConnection, *, tables: tuple[str, ...] | None = None) -> None:
    """Create the secondary indexes that are missing (of ``tables``, ``schema.table`` names; all by default)."""
    for index in SECONDARY:
        if tables is None or index.qualified_table in tables:
            db.execute(f"CREATE INDEX IF NOT EXISTS {index.name} ON {index.qualified_table} ({index.column})")


def drop(db: duckdb.DuckDBPyConnection) -> None:
    """Drop every secondary index (and the retired ones), committing at once.

    DuckDB 1.5.5 must drop a damaged index in a transaction of its own: dropping and creating an index of the same
    name in one transaction crashed the process ("pure virtual method called"), and deleting rows in the
    transaction that dropped and re-created it was a fatal error ("Failed to delete all rows from index")."""
    names = [f"{index.schema}.{index.name}" for index in SECONDARY] + list(RETIRED)
    for name in names:
        db.execute(f"DROP INDEX IF EXISTS {name}")


def rebuild(db: duckdb.DuckDBPyConnection) -> None:
    """Drop and recreate every secondary index whose table exists, each step committed on its own: a rebuilt index
    holds exactly its table's rows, whatever happened to the old one. Outside any transaction."""
    drop(db)
    create(db, tables=tuple(qualified_tables(db)))


def missing(db: duckdb.DuckDBPyConnection) -> list[SecondaryIndex]:
    """The secondary indexes whose table exists but which do not."""
    present = qualified_tables(db)
    existing = {(schema, name) for schema, name in db.execute(
        "SELECT schema_name, index_name FROM duckdb_indexes() WHERE database_name = current_database()").fetchall()}
    return [index for index in SECONDARY
            if index.qualified_table in present and (index.schema, index.name) not in existing]


def verify(db: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """(problems, notes): one problem per secondary index that misses rows of its table (none for a sound store),
    one note per index DuckDB would not scan (so it could not be verified).

    Raises this session's index-scan thresholds (and restores them) so that DuckDB answers every batch of keys
    through the index, and checks that it did."""
    absent = {index.name for index in missing(db)}
    present = qualified_tables(db)
    problems: list[str] = []
    notes: list[str] = []
    db.execute("SET SESSION index_scan_percentage = 1.0")
    db.execute("SET SESSION index_scan_max_count = 4611686018427387904")
    try:
        for index in SECONDARY:
            if index.qualified_table in present and index.name not in absent:
                _verify_one(db, index, problems, notes)
    finally:
        db.execute("RESET SESSION index_scan_percentage")
        db.execute("RESET SESSION index_scan_max_count")
    return problems, notes


def _verify_one(db: duckdb.DuckDBPyConnection, index: SecondaryIndex, problems: list[str], notes: list[str]) -> None:
    counted = _rows_found_through(db, index)
    if counted is None:
        # DuckDB reads a table of a few rows without its index whatever the thresholds; the rebuild in
        # `check --repair` and migration 0007 still covers such an index.
        rows = db.execute(f"SELECT count(*) FROM {index.qualified_table}").fetchone()[0]
        if rows > _SMALL_TABLE:
            notes.append(f"the index {index.name} could not be verified (DuckDB would not scan it)")
        return
    found, total = counted
    if found != total:
            problems.append(
                f"the index {index.name} on {index.qualified_table} misses {total - found} of {total} rows (DuckDB "
                "lost them when it checkpointed a replayed write-ahead log; lookups by "
                f"{index.column} fail and writes to those entries are refused): run `pcmem check --repair`")


def _rows_found_through(db: duckdb.DuckDBPyConnection, index: SecondaryIndex) -> tuple[int, int] | None:
    """(rows an index lookup of every key finds, rows the table holds); None when DuckDB does not use the index."""
    table, column = index.qualified_table, index.column
    keys = [key for (key,) in db.execute(f"SELECT DISTINCT {column} FROM {table} WHERE {column} IS NOT NULL "
                                         f"ORDER BY {column}").fetchall()]
    total = db.execute(f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL").fetchone()[0]
    # A batch takes every n-th key, so integer keys never form a dense run (DuckDB answers a dense IN list of
    # integers with a range filter over the table, not the index).
    stride = max(2, -(-len(keys) // _BATCH))
    found = 0
    for start in range(stride):
        batch = keys[start::stride]
        if not batch:
            continue
        values = ", ".join(literal(key) if isinstance(key, str) else str(int(key)) for key in batch)
        statement = f"SELECT count(*) FROM {table} WHERE {column} IN ({values})"
        if start == 0:
            plan = db.execute(f"EXPLAIN ANALYZE {statement}").fetchall()[0][1]
            if "Index Scan" not in plan:
                return None
        found += db.execute(statement).fetchone()[0]
    return found, total




def definitions(db: duckdb.DuckDBPyConnection, schema: str, table: str) -> list[str]:
    """The CREATE INDEX statements of every index on ``schema.table`` as the file holds them (to recreate them after
    the table is replaced: DuckDB drops a table's indexes with it)."""
    rows = db.execute("SELECT sql FROM duckdb_indexes() WHERE database_name = current_database() "
                      "AND schema_name = ? AND table_name = ?", [schema, table]).fetchall()
    return [sql for (sql,) in rows if sql]
