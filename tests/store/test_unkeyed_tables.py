"""What a write appends to costs no more than it must: no primary key DuckDB never looks anything up through, and no
string compression its commit log would decode again (store/duckdb/unkeyed.py, connection.DISABLED_COMPRESSION).

Both are about cost, but the tests pin the causes, not a timing: the store's constraints and storage encodings, the
upgrade of an older store (its rows, its lookup index, `check`), and `check` finding what the keys used to refuse.
"""

from __future__ import annotations

import duckdb

import pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest
from pcmem.store.duckdb import connection, unkeyed
from pcmem.testing import HashEmbedder

_KEYED_DEFINITIONS = {  # the three tables as migration 0001 made them before migration 0010
    "revisions": "artifact_id VARCHAR NOT NULL, revision BIGINT NOT NULL, operation VARCHAR NOT NULL, "
                 "change_count BIGINT NOT NULL, created_at TIMESTAMP NOT NULL, reason VARCHAR, "
                 "PRIMARY KEY (artifact_id, revision)",
    "entry_events": "artifact_id VARCHAR NOT NULL, revision BIGINT NOT NULL, entry_id VARCHAR NOT NULL, "
                    "entry_version_id VARCHAR NOT NULL, state VARCHAR NOT NULL, "
                    "PRIMARY KEY (artifact_id, entry_id, revision)",
    "head_entries": "artifact_id VARCHAR NOT NULL, entry_id VARCHAR NOT NULL, entry_version_id VARCHAR NOT NULL, "
                    "state VARCHAR NOT NULL, PRIMARY KEY (artifact_id, entry_id)",
}


def _primary_keys(path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as db:
        return {table for (table,) in db.execute("SELECT table_name FROM duckdb_constraints() "
                                                 "WHERE constraint_type = 'PRIMARY KEY'").fetchall()}


def _write_some(path) -> None:
    with pcmem.open(path, embedder=HashEmbedder(dimension=16)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=(NewEntry(entry_id="city", text="Lives in Lisbon."),
                                                 NewEntry(entry_id="pet", text="Has a cat named Miso."))))
        memory.revise(ReviseRequest(entry_id="city", text="Lives in Porto now.", expected_version=1))


def _contents(path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(path), read_only=True) as db:
        return {table: db.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall() for table in unkeyed.KEYS}


def _check(path):
    with pcmem.open(path, embedder=None) as runtime:
        return runtime.backend.check()


def test_a_new_store_keys_none_of_revisions_events_and_heads(db_path):
    _write_some(db_path)
    keyed = _primary_keys(db_path)
    assert not keyed & set(unkeyed.KEYS), keyed
    assert {"entry_versions", "embeddings", "memories", "recorded_writes"} <= keyed  # looked up by their keys


def _as_before_migration_0010(path) -> None:
    """Give the store the keyed tables (and migration record) a store made before migration 0010 had."""
    with duckdb.connect(str(path)) as db:
        for table, definition in _KEYED_DEFINITIONS.items():
            db.execute(f"CREATE TABLE {table}_keyed ({definition})")
            db.execute(f"INSERT INTO {table}_keyed SELECT * FROM {table}")
            db.execute(f"DROP TABLE {table}")
            db.execute(f"ALTER TABLE {table}_keyed RENAME TO {table}")
        db.execute("CREATE INDEX head_entries_by_entry ON head_entries (entry_id)")
        db.execute("DELETE FROM pcmem_migrations WHERE name = '0010_unused_keys_dropped'")
        db.execute("CHECKPOINT")


def test_an_older_store_loses_those_keys_when_opened_and_keeps_every_row(db_path):
    _write_some(db_path)
    _as_before_migration_0010(db_path)
    before = _contents(db_path)
    assert set(unkeyed.KEYS) <= _primary_keys(db_path), "the store must have the old keys, or this proves nothing"
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=16)):
        pass
    assert not _primary_keys(db_path) & set(unkeyed.KEYS)
    assert _contents(db_path) == before
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=16)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.revise(ReviseRequest(entry_id="pet", text="Has two cats.", expected_version=1))
        assert memory.get_entry("pet").entry.text == "Has two cats."
    with duckdb.connect(str(db_path), read_only=True) as db:
        indexes = {name for (name,) in db.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}
    assert "head_entries_by_entry" in indexes
    assert _check(db_path).ok


def test_an_upgrade_cut_short_after_the_keys_went_is_finished_by_the_next_open(db_path):
    """Migration 0010 drops the keys in a transaction of its own before the migrations' one: a process that dies in
    between leaves the tables rebuilt, without their lookup index and without the migration's record."""
    _write_some(db_path)
    _as_before_migration_0010(db_path)
    db = connection.connect(db_path)
    try:
        unkeyed.drop_keys(db)  # what the migration's first step does, and nothing after it
        assert db.execute("SELECT count(*) FROM duckdb_indexes() WHERE index_name = 'head_entries_by_entry'"
                          ).fetchone() == (0,)
    finally:
        db.close()
    report = _check(db_path)  # opening finishes the migration
    assert report.ok, report.problems
    with duckdb.connect(str(db_path), read_only=True) as raw:
        assert raw.execute("SELECT name FROM pcmem_migrations ORDER BY seq DESC LIMIT 1").fetchone() == (
            "0010_unused_keys_dropped",)


def test_check_reports_a_revision_event_or_head_row_written_twice(db_path):
    """What the primary keys refused, `check` finds (revisions are also checked to run 1..head without a gap)."""
    _write_some(db_path)
    with duckdb.connect(str(db_path)) as db:
        for table in unkeyed.KEYS:
            db.execute(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1")
    problems = _check(db_path).problems
    for table in unkeyed.KEYS:
        assert any(f"of {table} repeat another's" in problem for problem in problems), problems


def test_the_rows_a_write_appends_to_keep_their_strings_uncompressed(db_path):
    """DuckDB 1.5.5 logs a commit's new rows by scanning back the 2,048-row vector they joined, and a table with an
    index appends into its last checkpointed row group: with dictionary + FSST strings (DuckDB's choice once a table
    is large enough) every write decoded up to 2,047 stored rows of each such table again, so a remember cost more
    as the store grew."""
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=16)) as runtime:
        runtime.memory.for_scope("s").remember(RememberRequest(entries=tuple(
            NewEntry(text=f"note {i} about otters, rivers and the {i % 13}th bridge") for i in range(3000))))
    with duckdb.connect(str(db_path), read_only=True) as db:
        methods = {method for table in ("entry_versions", "entry_events", "head_entries", "revisions",
                                        "fts_main_fts_docs.docs", "fts_main_fts_docs.dict")
                   for (method,) in db.execute("SELECT DISTINCT compression FROM pragma_storage_info(?) "
                                               "WHERE segment_type = 'VARCHAR' AND persistent", [table]).fetchall()}
    assert methods and not methods & {"DICT_FSST", "FSST", "Dictionary"}, methods
