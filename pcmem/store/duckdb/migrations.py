"""Named, ordered schema migrations, recorded in the store file itself.

A file records the names of the migrations applied to it, in order. Opening a file applies the missing tail of
:data:`MIGRATIONS`; a file whose recorded names are not a prefix of this list was written by a newer (or different)
pcmem and is refused rather than guessed at. Migrations only ever add: revisions are insert-only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from pcmem.analysis import DEFAULT_ANALYZER
from pcmem.errors import StoreFormatError, StoreVersionError

FORMAT_MARKER = "pcmem-store"


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[duckdb.DuckDBPyConnection], None]
    #: Runs before the migrations' transaction, committed on its own (some DuckDB changes cannot share one).
    prepare: Callable[[duckdb.DuckDBPyConnection], None] | None = None


def _core_schema(db: duckdb.DuckDBPyConnection) -> None:
    # The truth is insert-only: entry_versions (immutable texts) and entry_events (what each revision did to each
    # entry). head_entries is a projection of the latest event per entry, kept so head reads and writes cost
    # O(change) instead of replaying the event log.
    db.execute(
        """
        CREATE TABLE memories (
            artifact_id VARCHAR PRIMARY KEY,
            scope VARCHAR NOT NULL UNIQUE,
            head_revision BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        CREATE TABLE revisions (
            artifact_id VARCHAR NOT NULL,
            revision BIGINT NOT NULL,
            operation VARCHAR NOT NULL,
            change_count BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE entry_versions (
            entry_version_id VARCHAR PRIMARY KEY,
            artifact_id VARCHAR NOT NULL,
            entry_id VARCHAR NOT NULL,
            version BIGINT NOT NULL,
            kind VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL,
            metadata VARCHAR NOT NULL,
            created_in_revision BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE entry_events (
            artifact_id VARCHAR NOT NULL,
            revision BIGINT NOT NULL,
            entry_id VARCHAR NOT NULL,
            entry_version_id VARCHAR NOT NULL,
            state VARCHAR NOT NULL
        );
        CREATE TABLE head_entries (
            artifact_id VARCHAR NOT NULL,
            entry_id VARCHAR NOT NULL,
            entry_version_id VARCHAR NOT NULL,
            state VARCHAR NOT NULL
        );
        """
        # Stores made before migration 0007 also got entry_events_by_revision here; 0007 drops it (see indexes.py).
        # Stores made before migration 0010 also got primary keys on revisions, entry_events and head_entries; 0010
        # drops them (see unkeyed.py).
    )


def _search_projections(db: duckdb.DuckDBPyConnection) -> None:
    # Derived data for search: the full-text index over active head versions (maintained incrementally, see
    # fts_index) and the embedding profile + vectors. Existing head entries are indexed now; vectors wait for
    # `pcmem reindex` or the next write with an embedder.
    from pcmem.store.duckdb import connection, fts_index, vectors

    connection.load_fts(db)
    fts_index.create(db)
    vectors.create(db)
    rows = db.execute(
        "SELECT v.entry_version_id, v.text FROM head_entries h JOIN entry_versions v USING (entry_version_id) "
        "WHERE h.state = 'active'"
    ).fetchall()
    fts_index.add_documents(db, rows, fts_index.ANALYZERS["v1"])


def _record_fts_analyzer(db: duckdb.DuckDBPyConnection) -> None:
    # An index built before analyzers were recorded was built with v1 and keeps it (queries must match it);
    # an empty index — a new store — starts with the current default.
    from pcmem.store.duckdb import fts_index

    has_docs = db.execute(f"SELECT count(*) FROM {fts_index.SCHEMA}.docs").fetchone()[0] > 0
    fts_index.record_analyzer(db, "v1" if has_docs else DEFAULT_ANALYZER)


def _embedding_roles(db: duckdb.DuckDBPyConnection) -> None:
    # An embedder switch fills a pending profile next to the active one (see vectors).
    from pcmem.store.duckdb import vectors

    vectors.add_roles(db)


def _search_lookup_indexes(db: duckdb.DuckDBPyConnection) -> None:
    # Point lookups a search makes (query terms, a page's versions, new documents) use ART indexes instead of
    # scanning a store-wide column.
    from pcmem.store.duckdb import indexes

    indexes.create(db)


def _secondary_embeddings(db: duckdb.DuckDBPyConnection) -> None:
    # A secondary embedding profile (role 'secondary', table embeddings_secondary, created when a profile is set: its
    # dimension decides the column type) keeps a second embedder's vectors for the embedding reranker. Nothing to
    # create until then; the migration exists so that an older pcmem, which would neither write nor erase those
    # vectors (a forgotten entry's vector would survive its erasure), refuses the file instead of opening it.
    db.execute("SELECT count(*) FROM embedding_profile WHERE role = 'secondary'")


def _drop_secondary_indexes(db: duckdb.DuckDBPyConnection) -> None:
    # Cures files whose CREATE INDEX indexes lost rows when DuckDB checkpointed a replayed log (see indexes.py): they
    # are dropped (on their own) and created again by the migration; the two-column index on entry_events, which
    # DuckDB never scans, is not.
    from pcmem.store.duckdb import indexes

    indexes.drop(db)


def _create_secondary_indexes(db: duckdb.DuckDBPyConnection) -> None:
    from pcmem.store.duckdb import indexes

    indexes.create(db)


def _revision_reasons(db: duckdb.DuckDBPyConnection) -> None:
    # Why a write was made (its request's reason), kept with its revision; NULL for older revisions and writes that
    # gave none. Also makes an older pcmem, which would drop the reasons of its writes, refuse the file.
    db.execute("ALTER TABLE revisions ADD COLUMN IF NOT EXISTS reason VARCHAR")


def _recorded_writes(db: duckdb.DuckDBPyConnection) -> None:
    # Writes made with an idempotency key record their key and outcome in their own transaction, so a write sent
    # again after a lost answer returns the first outcome (pcmem.memory.write_records). Also makes an older pcmem,
    # which would apply such a write a second time, refuse the file.
    from pcmem.store.duckdb import write_records

    write_records.create(db)


def _drop_unused_keys(db: duckdb.DuckDBPyConnection) -> None:
    # Primary keys DuckDB answers no lookup through, which only cost every write (see unkeyed.py): the tables are
    # rebuilt without them, in a transaction of their own.
    from pcmem.store.duckdb import unkeyed

    unkeyed.drop_keys(db)


def _index_rebuilt_heads(db: duckdb.DuckDBPyConnection) -> None:
    # The rebuilt head_entries lost its lookup index (a new store's still has it: IF NOT EXISTS).
    from pcmem.store.duckdb import indexes

    indexes.create(db, tables=("main.head_entries",))


MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_core_schema", _core_schema),
    Migration("0002_search_projections", _search_projections),
    Migration("0003_fts_analyzer", _record_fts_analyzer),
    Migration("0004_embedding_roles", _embedding_roles),
    Migration("0005_search_lookup_indexes", _search_lookup_indexes),
    Migration("0006_secondary_embeddings", _secondary_embeddings),
    Migration("0007_rebuild_secondary_indexes", _create_secondary_indexes, prepare=_drop_secondary_indexes),
    Migration("0008_revision_reasons", _revision_reasons),
    Migration("0009_recorded_writes", _recorded_writes),
    Migration("0010_unused_keys_dropped", _index_rebuilt_heads, prepare=_drop_unused_keys),
)


# Every kind of object a DuckDB catalog can hold, as "kind name" strings. A file without pcmem's marker that holds
# any of them — a view, a sequence, a macro, a schema, not only a table — is someone else's and is never written to.
_CATALOG_OBJECTS = """
    SELECT 'table ' || schema_name || '.' || table_name FROM duckdb_tables() WHERE database_name = current_database()
    UNION ALL SELECT 'view ' || schema_name || '.' || view_name FROM duckdb_views()
        WHERE database_name = current_database() AND NOT internal
    UNION ALL SELECT 'sequence ' || schema_name || '.' || sequence_name FROM duckdb_sequences()
        WHERE database_name = current_database()
    UNION ALL SELECT function_type || ' ' || schema_name || '.' || function_name FROM duckdb_functions()
        WHERE database_name = current_database() AND NOT internal
    UNION ALL SELECT 'type ' || schema_name || '.' || type_name FROM duckdb_types()
        WHERE database_name = current_database() AND NOT internal
    UNION ALL SELECT 'schema ' || schema_name FROM duckdb_schemas()
        WHERE database_name = current_database() AND NOT internal
"""


def _table_names(db: duckdb.DuckDBPyConnection) -> set[str]:
    rows = db.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()
    return {name for (name,) in rows}


def catalog_objects(db: duckdb.DuckDBPyConnection) -> list[str]:
    return sorted(name for (name,) in db.execute(_CATALOG_OBJECTS).fetchall())


def applied_migrations(db: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of the migrations recorded in the file, in order; raises StoreFormatError for a foreign file."""
    tables = _table_names(db)
    if "pcmem_meta" not in tables:
        objects = catalog_objects(db)
        if objects:
            raise StoreFormatError(
                f"this DuckDB file belongs to something else (it holds {', '.join(objects[:5])}"
                f"{' …' if len(objects) > 5 else ''} but no pcmem marker); pcmem leaves it untouched"
            )
        return []
    marker = db.execute("SELECT value FROM pcmem_meta WHERE key = 'format'").fetchone()
    if marker is None or marker[0] != FORMAT_MARKER:
        raise StoreFormatError("this DuckDB file has a pcmem_meta table but no pcmem format marker")
    return [name for (name,) in db.execute("SELECT name FROM pcmem_migrations ORDER BY seq").fetchall()]


def _unapplied(applied: list[str]) -> tuple[Migration, ...]:
    """The migrations after ``applied``; raises StoreVersionError when ``applied`` is not a prefix of ours."""
    known = [migration.name for migration in MIGRATIONS]
    if applied != known[: len(applied)]:
        unknown = [name for name in applied if name not in known]
        raise StoreVersionError(
            f"this store was written by a newer pcmem (unknown migrations {unknown or applied}); upgrade pcmem to open it"
        )
    return MIGRATIONS[len(applied) :]


def pending(db: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of the migrations this file still needs; raises for a foreign or newer file."""
    return [migration.name for migration in _unapplied(applied_migrations(db))]


def migrate(db: duckdb.DuckDBPyConnection) -> list[str]:
    """Bring the file up to date; return the names of the migrations applied now."""
    applied = applied_migrations(db)
    pending = _unapplied(applied)
    if not pending:
        return []
    for migration in pending:
        if migration.prepare is not None and applied:  # a new store has nothing to prepare
            migration.prepare(db)
    db.execute("BEGIN TRANSACTION")
    try:
        if not applied:
            db.execute("CREATE TABLE pcmem_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
            db.execute(
                "CREATE TABLE pcmem_migrations (seq INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
            )
            db.execute("INSERT INTO pcmem_meta VALUES ('format', ?)", [FORMAT_MARKER])
        for seq, migration in enumerate(pending, start=len(applied) + 1):
            migration.apply(db)
            now = datetime.now(UTC).replace(tzinfo=None)
            db.execute("INSERT INTO pcmem_migrations VALUES (?, ?, ?)", [seq, migration.name, now])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return [migration.name for migration in pending]
