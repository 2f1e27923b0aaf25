"""The secondary ART indexes a store needs, in one place: migrations and repair create them, ``check`` verifies them.

They are not constraints (primary keys and UNIQUE live in the tables' definitions) but lookups that keep a write or a
search O(change): without ``fts_dict_by_term`` every write scans the store-wide term dictionary. A missing one
changes no result, only the cost, which is why ``check`` must look for them by name.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from pcmem.store.duckdb.fts_index import SCHEMA as FTS_SCHEMA


@dataclass(frozen=True, slots=True)
class Index:
    name: str
    schema: str
    table: str
    columns: str

    @property
    def ddl(self) -> str:
        return f"CREATE INDEX IF NOT EXISTS {self.name} ON {self.schema}.{self.table} ({self.columns})"

    def describe(self) -> str:
        return f"the index {self.name} on {self.schema}.{self.table} ({self.columns})"


EXPECTED: tuple[Index, ...] = (
    Index("entry_events_by_revision", "main", "entry_events", "artifact_id, revision"),
    Index("head_entries_by_entry", "main", "head_entries", "entry_id"),
    Index("fts_dict_by_term", FTS_SCHEMA, "dict", "term"),
    Index("fts_dict_by_termid", FTS_SCHEMA, "dict", "termid"),
    Index("fts_docs_by_name", FTS_SCHEMA, "docs", "name"),
    Index("fts_terms_by_doc", FTS_SCHEMA, "terms", "docid"),
)


def _present(db: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    rows = db.execute("SELECT schema_name, index_name FROM duckdb_indexes() "
                      "WHERE database_name = current_database()").fetchall()
    return {(schema, name) for schema, name in rows}


def _tables(db: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    rows = db.execute("SELECT schema_name, table_name FROM duckdb_tables() "
                      "WHERE database_name = current_database()").fetchall()
    return {(schema, name) for schema, name in rows}


def missing(db: duckdb.DuckDBPyConnection) -> list[Index]:
    """Expected indexes absent from the file, on tables that exist (a missing table is reported on its own)."""
    present, tables = _present(db), _tables(db)
    return [index for index in EXPECTED
            if (index.schema, index.name) not in present and (index.schema, index.table) in tables]


def create(db: duckdb.DuckDBPyConnection, schema: str | None = None) -> None:
    """Create every expected index (of ``schema`` only, when given) that does not exist yet."""
    for index in EXPECTED:
        if schema is None or index.schema == schema:
            db.execute(index.ddl)


def definitions(db: duckdb.DuckDBPyConnection, schema: str, table: str) -> list[str]:
    """The CREATE INDEX statements of every index on ``schema.table`` as the file holds them (to recreate them after
    the table is replaced: DuckDB drops a table's indexes with it)."""
    rows = db.execute("SELECT sql FROM duckdb_indexes() WHERE database_name = current_database() "
                      "AND schema_name = ? AND table_name = ?", [schema, table]).fetchall()
    return [sql for (sql,) in rows if sql]
