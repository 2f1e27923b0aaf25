"""The primary keys a store no longer has, and the check that took their place.

``revisions`` (artifact_id, revision), ``entry_events`` (artifact_id, entry_id, revision) and ``head_entries``
(artifact_id, entry_id) had multi-column primary keys. DuckDB 1.5 answers no lookup through a multi-column ART index
(head rows are found through ``head_entries_by_entry``, see :mod:`.indexes`), so those keys only cost every write:
a transaction that appends to a table with a primary key builds two transaction-local ART indexes for it (DuckDB
checks the constraint against them), and its COMMIT inserts into the table's own key index.

What the keys guarded holds by construction — a scope's writes are serialised and each takes the next revision once; a
write looks an entry's head row up before it inserts one — and ``pcmem check`` verifies it (:func:`duplicates`).
Migration 0010 rebuilds those tables of an older store without their keys (:func:`drop_keys`); a new store is made
without them (migration 0001).
"""

from __future__ import annotations

import duckdb

#: Each table that has no primary key any more, and the columns that still name one row of it.
KEYS: dict[str, tuple[str, ...]] = {
    "revisions": ("artifact_id", "revision"),
    "entry_events": ("artifact_id", "entry_id", "revision"),
    "head_entries": ("artifact_id", "entry_id"),
}


def keyed(db: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables of :data:`KEYS` that still have their primary key (a store made before migration 0010)."""
    rows = db.execute("SELECT DISTINCT table_name FROM duckdb_constraints() WHERE database_name = current_database() "
                      "AND schema_name = 'main' AND constraint_type = 'PRIMARY KEY'").fetchall()
    with_key = {name for (name,) in rows}
    return [table for table in KEYS if table in with_key]


def drop_keys(db: duckdb.DuckDBPyConnection) -> None:
    """Rebuild each table of :data:`KEYS` that still has a primary key without it, in one transaction of its own
    (outside any other: DuckDB has no ``DROP CONSTRAINT``, so the rows move to a new table that takes the old one's
    name). The rebuilt ``head_entries`` has lost its lookup index: migration 0010 creates it again in the
    migrations' transaction — never in this one, which dropped it (DuckDB 1.5.5 crashed dropping and creating an
    index of one name in one transaction, see :func:`indexes.drop`). Nothing to do for a store without the keys, so
    a run cut short is finished by the next open."""
    tables = keyed(db)
    if not tables:
        return
    db.execute("BEGIN TRANSACTION")
    try:
        for table in tables:
            _rebuild_without_key(db, table)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _rebuild_without_key(db: duckdb.DuckDBPyConnection, table: str) -> None:
    columns = db.execute("SELECT column_name, data_type, is_nullable FROM duckdb_columns() WHERE database_name = "
                         "current_database() AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
                         [table]).fetchall()
    definition = ", ".join(f'"{name}" {kind}{"" if nullable else " NOT NULL"}' for name, kind, nullable in columns)
    db.execute(f"CREATE TABLE {table}__unkeyed ({definition})")
    db.execute(f"INSERT INTO {table}__unkeyed SELECT * FROM {table}")
    db.execute(f"DROP TABLE {table}")
    db.execute(f"ALTER TABLE {table}__unkeyed RENAME TO {table}")


def duplicates(db: duckdb.DuckDBPyConnection) -> list[str]:
    """One problem per table of :data:`KEYS` (that exists) holding a row twice under its key."""
    present = {name for (name,) in db.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                              "current_database() AND schema_name = 'main'").fetchall()}
    problems = []
    for table, key in KEYS.items():
        if table not in present:
            continue
        extra = db.execute(f"SELECT count(*) - count(DISTINCT ({', '.join(key)})) FROM {table}").fetchone()[0]
        if extra:
            problems.append(f"{extra} rows of {table} repeat another's ({', '.join(key)}): a revision, event or head "
                            "row written twice")
    return problems
