"""The store file itself: migrations, foreign and newer files, and the O(change) cost of writes."""

from __future__ import annotations

import duckdb
import pytest

import pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest, StoreFormatError, StoreVersionError
from pcmem.store.duckdb.migrations import MIGRATIONS
from pcmem.types.search import SearchMemoryRequest


def test_new_file_records_every_migration_in_order(db_path):
    pcmem.open(db_path).close()
    with duckdb.connect(str(db_path)) as db:
        rows = db.execute("SELECT seq, name FROM pcmem_migrations ORDER BY seq").fetchall()
        marker = db.execute("SELECT value FROM pcmem_meta WHERE key = 'format'").fetchone()
    assert rows == [(i, m.name) for i, m in enumerate(MIGRATIONS, start=1)]
    assert marker == ("pcmem-store",)


def test_reopening_applies_nothing_twice(db_path):
    pcmem.open(db_path).close()
    pcmem.open(db_path).close()
    with duckdb.connect(str(db_path)) as db:
        assert db.execute("SELECT count(*) FROM pcmem_migrations").fetchone() == (len(MIGRATIONS),)


def test_file_from_a_newer_pcmem_is_refused_untouched(db_path):
    pcmem.open(db_path).close()
    with duckdb.connect(str(db_path)) as db:
        db.execute("INSERT INTO pcmem_migrations VALUES (999, '9999_from_the_future', now()::TIMESTAMP)")
    with pytest.raises(StoreVersionError, match="newer pcmem"):
        pcmem.open(db_path)
    with duckdb.connect(str(db_path)) as db:
        assert db.execute("SELECT max(seq) FROM pcmem_migrations").fetchone() == (999,)


def test_foreign_duckdb_file_is_refused_untouched(db_path):
    with duckdb.connect(str(db_path)) as db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreFormatError, match="belongs to something else"):
        pcmem.open(db_path)
    with duckdb.connect(str(db_path)) as db:
        tables = {name for (name,) in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert tables == {"invoices"}


def test_non_duckdb_file_is_a_format_error(db_path):
    db_path.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreFormatError, match="not a DuckDB database"):
        pcmem.open(db_path)
    assert db_path.read_text().startswith("this is not a database")


def test_directory_is_refused(tmp_path):
    with pytest.raises(pcmem.StoreError, match="directory"):
        pcmem.open(tmp_path)


def _all_rows(db_path) -> dict[str, set[tuple]]:
    """Every row of every pcmem table, with DuckDB's rowid, so an update in place shows up as a changed row."""
    with duckdb.connect(str(db_path)) as db:
        tables = [name for (name,) in db.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()]
        return {table: set(db.execute(f"SELECT rowid, * FROM {table}").fetchall()) for table in tables}


def _rows_touched_by_one_revise(db_path, size: int) -> tuple[int, set[str]]:
    with pcmem.open(db_path) as runtime:
        memory = runtime.memory.for_scope("big")
        entries = tuple(NewEntry(text=f"entry number {i} about topic {i % 7}") for i in range(size))
        written = memory.remember(RememberRequest(entries=entries))
        target = written.citations[size // 2]
    before = _all_rows(db_path)
    with pcmem.open(db_path) as runtime:
        runtime.memory.for_scope("big").revise(
            ReviseRequest(entry_id=target.entry_id, text="a revised entry", expected_revision=1))
    after = _all_rows(db_path)
    touched = 0
    touched_entries: set[str] = set()
    for table in after:
        changed = after[table] ^ before[table]
        touched += len(changed)
        for row in changed:
            touched_entries.update(value for value in row if isinstance(value, str) and value.startswith("ent_"))
    return touched, touched_entries - {target.entry_id}


def test_a_write_costs_o_change_not_o_scope(tmp_path):
    small, small_others = _rows_touched_by_one_revise(tmp_path / "small.duckdb", 20)
    large, large_others = _rows_touched_by_one_revise(tmp_path / "large.duckdb", 2000)
    assert small == large, "rows touched by one revise must not grow with the scope"
    assert small_others == large_others == set(), "no other entry's rows may change"
    assert 0 < small < 20


def test_new_stores_record_analyzer_v2_and_repair_can_switch(db_path):
    from pcmem.types.search import SearchMemoryRequest

    with pcmem.open(db_path, embedder=None) as runtime:
        assert runtime.backend.analyzer.name == "v2"
        memory = runtime.memory.for_scope("p")
        memory.remember("The team deploys on Thursdays.")
        assert len(memory.search(SearchMemoryRequest(query="deploy", mode="fts")).hits) == 1
        assert runtime.backend.repair(analyzer="v1").ok
        assert runtime.backend.analyzer.name == "v1"
        assert memory.search(SearchMemoryRequest(query="deploy", mode="fts")).hits == ()
    with pcmem.open(db_path, embedder=None) as runtime:
        assert runtime.backend.analyzer.name == "v1"  # recorded in the file


def test_a_store_indexed_before_analyzers_were_recorded_keeps_v1(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        runtime.memory.for_scope("p").remember("Deploys happen on Thursdays.")
    with duckdb.connect(str(db_path)) as db:  # rewind the file to before migration 0003
        db.execute("DELETE FROM pcmem_meta WHERE key = 'fts_analyzer'")
        db.execute("DELETE FROM pcmem_migrations WHERE name >= '0003'")
        db.execute("ALTER TABLE embedding_profile DROP COLUMN role")
    with pcmem.open(db_path, embedder=None) as runtime:
        assert runtime.backend.analyzer.name == "v1"


def test_a_store_from_before_embedder_switches_keeps_its_vectors(db_path, fake_embedder):
    with pcmem.open(db_path, embedder=fake_embedder) as runtime:
        runtime.memory.for_scope("p").remember("Deploys happen on Thursdays.")
    with duckdb.connect(str(db_path)) as db:  # rewind the file to before migration 0004
        db.execute("DELETE FROM pcmem_migrations WHERE name >= '0004'")
        db.execute("ALTER TABLE embedding_profile DROP COLUMN role")
    with pcmem.open(db_path, embedder=fake_embedder) as runtime:
        assert runtime.backend.embedding_profile() == fake_embedder.profile
        assert runtime.backend.pending_embedding_profile() is None
        page = runtime.memory.for_scope("p").search(SearchMemoryRequest(query="deploys happen", mode="vector"))
        assert [hit.text for hit in page.hits] == ["Deploys happen on Thursdays."]


def test_new_store_files_are_owner_only(tmp_path):
    path = tmp_path / "private" / "memory.duckdb"
    pcmem.open(path, embedder=None).close()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_duckdb_never_prints_a_progress_bar_to_the_hosts_stdout(tmp_path):
    """A statement past 2 s (a checkpoint on a busy machine) made DuckDB draw a progress bar on stdout, which broke
    `--json` output and the crash harness's line protocol: every connection and every cursor has it off."""
    from pcmem.store.duckdb import connection

    db = connection.connect(tmp_path / "quiet.duckdb")
    try:
        for handle in (db, connection.quiet(db.cursor())):
            assert handle.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    finally:
        db.close()


def test_a_store_from_before_revision_reasons_keeps_its_revisions_and_records_new_reasons(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        runtime.memory.for_scope("p").remember(pcmem.NewEntry(text="Deploys happen on Thursdays.", entry_id="d"))
    with duckdb.connect(str(db_path)) as db:  # rewind the file to before migration 0008
        db.execute("DELETE FROM pcmem_migrations WHERE name >= '0008'")
        db.execute("ALTER TABLE revisions DROP COLUMN reason")
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("p")
        memory.retire(pcmem.RetireRequest(entry_id="d", expected_revision=1, reason="moved to Fridays"))
        assert [(r.revision, r.reason) for r in memory.revisions()] == [(1, None), (2, "moved to Fridays")]
