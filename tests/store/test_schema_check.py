"""A store whose schema or head is damaged is refused before anything is written, and left byte for byte as it was
(issue #38, item 6b). It used to be opened and written to first: a renamed column let a remember commit, a cut
migrations table re-ran migrations half-way and left a log, a head past its last revision got revision 10 after 2."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

import pcmem
from pcmem.store.duckdb import migrations
from pcmem.store.duckdb.schema_check import ADDED_BY, REPEATABLE, expected_columns

PCMEM = [sys.executable, "-m", "pcmem"]

DAMAGE = {
    "renamed column": ("ALTER TABLE entry_versions RENAME COLUMN kind TO sort",
                       "main.entry_versions has no column kind (it has sort)"),
    "dropped table": ("DROP TABLE entry_events", "the table main.entry_events is missing"),
    "migrations cut short": ("DELETE FROM pcmem_migrations WHERE seq > 3",
                             "main.embedding_profile.role (from 0004_embedding_roles, which it does not record"),
    "migrations emptied": ("DELETE FROM pcmem_migrations", "which it does not record: the migrations table was cut"),
    "a migration missing": ("DELETE FROM pcmem_migrations WHERE seq = 2", "its migrations table is damaged"),
    "renamed column of revisions": ("ALTER TABLE revisions RENAME COLUMN operation TO op",
                                    "main.revisions has no column operation (it has op)"),
    "head past the last revision": ("UPDATE memories SET head_revision = 9",
                                    "scope 's' names revision 9 as its head, but its last revision is 2"),
    "head on missing versions": ("UPDATE head_entries SET entry_version_id = 'ver_gone' WHERE entry_id = 'a'",
                                 "1 head entries of scope 's' name versions the file does not hold"),
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sound_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sound") / "m.duckdb"
    for entry_id, text in (("a", "first entry"), ("b", "second entry")):
        done = subprocess.run([*PCMEM, "--db", str(path), "remember", "--scope", "s", "--id", entry_id, text],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_store_is_refused_before_any_write_and_left_byte_identical(sound_store, tmp_path, damage):
    statement, named = DAMAGE[damage]
    path = tmp_path / "m.duckdb"
    path.write_bytes(sound_store.read_bytes())
    connection = duckdb.connect(str(path))
    connection.execute(statement)
    connection.close()
    before, names = _digest(path), sorted(p.name for p in tmp_path.iterdir())
    done = subprocess.run([*PCMEM, "--db", str(path), "remember", "--scope", "s", "a third entry"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 5, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert _digest(path) == before and sorted(p.name for p in tmp_path.iterdir()) == names


def test_a_sound_store_is_written_as_before(sound_store, tmp_path):
    path = tmp_path / "m.duckdb"
    path.write_bytes(sound_store.read_bytes())
    with pcmem.open(path) as runtime:
        scope = runtime.memory.for_scope("s")
        assert scope.remember("a third entry").memory.revision == 3
        assert runtime.memory.for_scope("new").remember("a new scope").memory.revision == 1


def _migrated(path: Path, count: int) -> dict[str, set[str]]:
    """A store with the first ``count`` migrations applied as :func:`migrations.migrate` applies them, and its
    columns."""
    db = duckdb.connect(str(path))
    db.execute("CREATE TABLE pcmem_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
    db.execute("CREATE TABLE pcmem_migrations (seq INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
               "applied_at TIMESTAMP NOT NULL)")
    for seq, migration in enumerate(migrations.MIGRATIONS[:count], start=1):
        migration.apply(db)
        db.execute("INSERT INTO pcmem_migrations VALUES (?, ?, ?)", [seq, migration.name, datetime.now(UTC)])
    found: dict[str, set[str]] = {}
    for schema, table, column in db.execute("SELECT schema_name, table_name, column_name FROM duckdb_columns() "
                                            "WHERE database_name = current_database()").fetchall():
        found.setdefault(f"{schema}.{table}", set()).add(column)
    db.close()
    return found


def test_a_repeatable_migration_is_one_that_runs_twice(tmp_path):
    _migrated(tmp_path / "m.duckdb", len(migrations.MIGRATIONS))
    db = duckdb.connect(str(tmp_path / "m.duckdb"))
    for migration in migrations.MIGRATIONS:
        if migration.name in REPEATABLE:
            migration.apply(db)  # raises if it is not
    db.close()


def test_the_columns_declared_per_migration_are_what_the_migrations_make(tmp_path):
    """Migration by migration: every declared table has exactly its declared columns, nothing a later migration adds."""
    names = [migration.name for migration in migrations.MIGRATIONS]
    assert set(ADDED_BY) <= set(names)
    declared = {table for added in ADDED_BY.values() for table in added}
    for count in range(1, len(names) + 1):
        found = _migrated(tmp_path / f"m{count}.duckdb", count)
        expected = expected_columns(names[:count])
        assert {table: found.get(table) for table in declared if table in found} == {
            table: set(columns) for table, columns in expected.items()}, names[count - 1]


def test_column_names_read_from_the_create_statements_are_duckdb_s_own(sound_store, tmp_path):
    from pcmem.store.duckdb.schema_check import _columns

    db = duckdb.connect(str(tmp_path / "odd.duckdb"))
    db.execute("""CREATE TABLE "we""ird"("key" VARCHAR DEFAULT 'a,b', "x""y" INTEGER, z DECIMAL(18,3) CHECK (z > 0),
                  v FLOAT[3], s STRUCT(a INTEGER, b VARCHAR), PRIMARY KEY ("key"), UNIQUE (z))""")
    db.execute(f"ATTACH '{sound_store}' AS sound (READ_ONLY)")
    for database in ("odd", "sound"):
        db.execute(f"USE {database}")
        truth: dict[str, set[str]] = {}
        for schema, table, column in db.execute("SELECT schema_name, table_name, column_name FROM duckdb_columns() "
                                                "WHERE database_name = current_database()").fetchall():
            truth.setdefault(f"{schema}.{table}", set()).add(column)
        assert _columns(db) == truth
    db.close()
