"""Integrity check of a store file, and repair of its derived data.

The truth is insert-only: ``revisions``, ``entry_versions`` and ``entry_events``. Everything else is derived —
``head_entries``, the FTS index tables and the vectors — and can be rebuilt from the truth. ``check`` reports
problems without changing anything; ``repair`` rebuilds the derived data inside one transaction.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pcmem.ids import content_hash
from pcmem.store.duckdb import blocks, connection, fts_index, indexes, migrations, unkeyed, vectors
from pcmem.types.storage import CheckReport

__all__ = ["CheckReport", "check", "missing_structures", "note_log_copies", "repair"]


def note_log_copies(report: CheckReport, copies: list[Path]) -> CheckReport:
    """Add the copies of the store's log kept next to it (:func:`pcmem.store.duckdb.wal.damaged_wal_copies`) to
    ``report``: a note, not a problem — the store does not need them, but they may hold entries' text."""
    for copy in copies:
        try:
            report.log_copies[str(copy)] = copy.stat().st_size
        except OSError:
            continue
    if report.log_copies:
        names = ", ".join(Path(copy).name for copy in list(report.log_copies)[:5]) + (" …" if len(copies) > 5 else "")
        report.notes.append(
            f"{len(report.log_copies)} copies of the write-ahead log next to the store ({names}; "
            f"{sum(report.log_copies.values()):,} bytes), set aside after a log was cut short (a kill inside a commit) "
            "or moved aside by hand: the store does not need them, and they may hold entries' text, forgotten ones "
            "too. Keep them only to investigate, then delete them; `pcmem forget` overwrites and deletes them.")
    return report


def _count(db: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> int:
    return db.execute(sql, params or []).fetchone()[0]


def check(db: duckdb.DuckDBPyConnection, scan: blocks.BlockScan | None = None) -> CheckReport:
    """Verify the file; ``scan`` is the result of :func:`blocks.scan` over it (made while this process holds it)."""
    report = CheckReport()
    if scan is not None and not scan.ok:
        _report_damaged_blocks(db, report, scan)
        return report  # every other check reads tables through DuckDB, which stops at the first damaged block
    applied = migrations.applied_migrations(db)
    known = [m.name for m in migrations.MIGRATIONS]
    if applied != known:
        report.problems.append(f"migrations {applied} differ from this pcmem's {known}")
    report.scopes = _count(db, "SELECT count(*) FROM memories")
    report.revisions = _count(db, "SELECT count(*) FROM revisions")
    report.entry_versions = _count(db, "SELECT count(*) FROM entry_versions")
    report.problems.extend(unkeyed.duplicates(db))  # what the dropped primary keys refused (see unkeyed.py)
    _check_revision_chain(db, report)
    _check_hashes(db, report)
    missing = missing_structures(db)
    for structure in missing:
        report.problems.append(f"{structure} is missing (`pcmem check --repair` rebuilds it from the event log)")
    if "the head projection (head_entries)" not in missing:
        _check_head(db, report)
        if not any(structure.startswith("the full-text index") for structure in missing):
            _check_fts(db, report)
    _check_vectors(db, report, missing)
    _check_indexes(db, report)
    return report


_FTS_TABLES = ("docs", "terms", "dict", "stats")




def missing_structures(db: duckdb.DuckDBPyConnection) -> list[str]:
    """Every derived structure a store needs that is not in the file (each one rebuildable by :func:`repair`)."""
    tables = connection.qualified_tables(db)
    missing = []
    if "main.head_entries" not in tables:
        missing.append("the head projection (head_entries)")
    s = fts_index.SCHEMA
    absent = [name for name in _FTS_TABLES if f"{s}.{name}" not in tables]
    macros = {name for (name,) in db.execute(
        "SELECT function_name FROM duckdb_functions() WHERE schema_name = ? AND database_name = current_database()",
        [s]).fetchall()}
    if "main.fts_docs" not in tables or absent or "match_bm25" not in macros:
        what = ", ".join(absent + ([] if "match_bm25" in macros else ["match_bm25"])) or "fts_docs"
        missing.append(f"the full-text index ({s}: {what})")
    for role, table in vectors.TABLES.items():
        if vectors.profile(db, role) is not None and f"main.{table}" not in tables:
            missing.append(f"the {role} vector table ({table})")
    return missing


def _check_revision_chain(db: duckdb.DuckDBPyConnection, report: CheckReport) -> None:
    rows = db.execute(
        """SELECT m.scope, m.head_revision, count(r.revision), coalesce(min(r.revision), 0), coalesce(max(r.revision), 0)
           FROM memories m LEFT JOIN revisions r USING (artifact_id) GROUP BY ALL"""
    ).fetchall()
    for scope, head, count, low, high in rows:
        if (count, low, high) != (head, 1 if head else 0, head):
            report.problems.append(f"scope {scope!r}: revisions are not exactly 1..{head} (found {count}, {low}..{high})")
    orphans = _count(db, "SELECT count(*) FROM entry_events e ANTI JOIN revisions r USING (artifact_id, revision)")
    if orphans:
        report.problems.append(f"{orphans} entry events belong to no revision (a half-written revision)")
    empty = _count(db, "SELECT count(*) FROM revisions r ANTI JOIN entry_events e USING (artifact_id, revision)")
    if empty:
        report.problems.append(f"{empty} revisions have no entry events")
    # A forgotten entry's versions are gone on purpose: its events are a tombstone (an 'erased' event ends them).
    dangling = _count(db, """SELECT count(*) FROM entry_events e ANTI JOIN entry_versions v USING (entry_version_id)
                             WHERE (e.artifact_id, e.entry_id) NOT IN
                                   (SELECT (artifact_id, entry_id) FROM entry_events WHERE state = 'erased')""")
    if dangling:
        report.problems.append(f"{dangling} entry events point at missing entry versions")
    erased_text = _count(db, """SELECT count(*) FROM entry_versions v SEMI JOIN entry_events e
                                ON e.artifact_id = v.artifact_id AND e.entry_id = v.entry_id AND e.state = 'erased'""")
    if erased_text:
        report.problems.append(f"{erased_text} entry versions of forgotten entries still hold their text")
    report.tombstones = _count(db, "SELECT count(*) FROM entry_events WHERE state = 'erased'")


def _check_hashes(db: duckdb.DuckDBPyConnection, report: CheckReport) -> None:
    bad = [vid for vid, text, digest in db.execute("SELECT entry_version_id, text, content_hash FROM entry_versions")
           .fetchall() if content_hash(text) != digest]
    if bad:
        report.problems.append(f"{len(bad)} entry versions fail their sha256 content hash, e.g. {bad[:3]}")


_EXPECTED_HEAD = """
    SELECT artifact_id, entry_id, arg_max(entry_version_id, revision) AS entry_version_id,
           arg_max(state, revision) AS state
    FROM entry_events GROUP BY artifact_id, entry_id
"""


def _check_head(db: duckdb.DuckDBPyConnection, report: CheckReport) -> None:
    # Both directions, and EXCEPT ALL: a missing row, a wrong row and a duplicated row are all differences.
    missing = _count(db, f"SELECT count(*) FROM (({_EXPECTED_HEAD}) EXCEPT ALL (SELECT * FROM head_entries))")
    extra = _count(db, f"SELECT count(*) FROM ((SELECT * FROM head_entries) EXCEPT ALL ({_EXPECTED_HEAD}))")
    if missing or extra:
        report.problems.append(f"the head projection differs from the event log: {missing} rows missing or wrong, "
                               f"{extra} rows extra or wrong")


def _check_fts(db: duckdb.DuckDBPyConnection, report: CheckReport) -> None:
    s = fts_index.SCHEMA
    missing = _count(db, f"SELECT count(*) FROM head_entries h ANTI JOIN {s}.docs d ON d.name = h.entry_version_id "
                         "WHERE h.state = 'active'")
    extra = _count(db, f"SELECT count(*) FROM {s}.docs d ANTI JOIN head_entries h ON d.name = h.entry_version_id "
                       "AND h.state = 'active'")
    if missing or extra:
        report.problems.append(f"full-text index: {missing} active entries missing, {extra} stale documents")
    # Writes number documents and terms themselves (fts_index.IdFloor): an id taken twice would merge two postings.
    reused = _count(db, f"SELECT (SELECT count(*) - count(DISTINCT docid) FROM {s}.docs) "
                        f"+ (SELECT count(*) - count(DISTINCT termid) FROM {s}.dict)")
    if reused:
        report.problems.append(f"full-text index: {reused} document or term ids are used twice")
    bad_df = _count(db, f"""SELECT count(*) FROM {s}.dict d LEFT JOIN (SELECT termid, count(DISTINCT docid) n
                             FROM {s}.terms GROUP BY termid) t USING (termid) WHERE d.df != coalesce(t.n, 0)""")
    stats_ok = db.execute(
        f"SELECT s.num_docs = (SELECT count(*) FROM {s}.docs) AND "
        f"coalesce(abs(s.avgdl - (SELECT avg(len) FROM {s}.docs)), 0) < 1e-6 FROM {s}.stats s"
    ).fetchone()
    if bad_df or not (stats_ok and stats_ok[0]):
        report.problems.append(f"full-text index statistics are inconsistent ({bad_df} document frequencies off)")


def _check_vectors(db: duckdb.DuckDBPyConnection, report: CheckReport, missing: list[str]) -> None:
    present = connection.qualified_tables(db)
    tables = {name.removeprefix("main.") for name in present}
    for table in (t for t in vectors.TABLES.values() if t in tables):
        orphans = _count(db, f"SELECT count(*) FROM {table} e ANTI JOIN entry_versions v USING (entry_version_id)")
        if orphans:
            report.problems.append(f"{orphans} vectors in {table} belong to no entry version")
    active, pending = vectors.profile(db), vectors.profile(db, "pending")
    report.notes.append(f"embeddings: {active.describe() if active else 'none yet'}")
    if pending is not None and vectors.TABLES["pending"] in tables and "main.head_entries" in present:
        left = vectors.count_missing(db, vectors.TABLES["pending"])
        report.notes.append(f"a switch to {pending.describe()} is in progress ({left} entries left; searches use the "
                            f"current vectors until it completes): run `pcmem reindex --embedder ...` to finish it")
    secondary = vectors.profile(db, "secondary")
    if secondary is not None and vectors.TABLES["secondary"] in tables and "main.head_entries" in present:
        left = vectors.count_missing(db, vectors.TABLES["secondary"])
        report.notes.append(f"secondary embeddings (for --rerank embedding): {secondary.describe()}"
                            + (f", {left} active entries without one (the reranker embeds those per search): run "
                               "`pcmem reindex --rerank-embedder ...` to fill them" if left else ", complete"))


def _check_indexes(db: duckdb.DuckDBPyConnection, report: CheckReport) -> None:
    """Every secondary index pcmem expects (see indexes.SECONDARY) exists — a missing one changes no answer, it only
    makes writes and searches scan whole tables, so nothing else would notice — and holds every row of its table."""
    for index in indexes.missing(db):
        report.problems.append(f"the index {index.name} on {index.qualified_table} is missing: writes and searches "
                               "scan the whole table (`pcmem check --repair` recreates it)")
    problems, notes = indexes.verify(db)
    report.problems.extend(problems)
    report.notes.extend(notes)


def _report_damaged_blocks(db: duckdb.DuckDBPyConnection, report: CheckReport, scan: blocks.BlockScan) -> None:
    """What the damaged blocks hold, and what to do: damage in an index or the full-text index is left behind by a
    copy made with ``pcmem migrate`` (it reads a damaged file without index lookups and builds its own full-text
    index); damage in pcmem's own records is not."""
    report.damaged_blocks = list(scan.damaged)
    for header in scan.headers:
        report.problems.append(f"{header} of the file fails its checksum (damaged on disk)")
    if scan.damaged:
        listed = ", ".join(str(block) for block in scan.damaged[:10]) + (" …" if len(scan.damaged) > 10 else "")
        report.problems.append(f"{len(scan.damaged)} of the {scan.verified} storage blocks in use fail their checksum "
                               f"(damaged on disk: blocks {listed}); every read or write that needs one of them stops "
                               "with 'Corrupt database file'")
    owners, unreadable, metadata = _block_owners(db)
    tables = sorted(set(unreadable).union(*(owners.get(block, set()) for block in scan.damaged)))
    for table in tables:
        what = "the full-text index, rebuilt by a copy" if _rebuilt_by_copy(table) else "pcmem's records"
        report.problems.append(f"damaged: data of the table {table} ({what})")
    in_metadata = any(block in metadata for block in scan.damaged)
    if in_metadata:
        report.problems.append("damaged: DuckDB's metadata (the catalog and the tables' layout)")
    rest = [block for block in scan.damaged if block not in owners and block not in metadata]
    if rest and not unreadable:
        report.problems.append("damaged: index data (DuckDB does not say of which index)")
    elif len(rest) > len(unreadable):  # each unlisted table accounts for one unattributed block at least
        report.problems.append("damaged: more blocks, index data or more data of the tables above")
    _count_what_can_be_read(db, report)
    copy_rescues = bool(scan.damaged) and not scan.headers and not in_metadata and all(map(_rebuilt_by_copy, tables))
    report.notes.append(_what_to_do(scan.path, copy_rescues))


def _what_to_do(path: Path, copy_rescues: bool) -> str:
    if copy_rescues:
        return (f"what to do: copy the store to a new file with `pcmem migrate --from '{path}' --to NEW.duckdb` (it "
                "reads around damaged indexes, rebuilds the full-text index and verifies the copy), then use "
                f"NEW.duckdb in place of {path.name}. `check --repair` cannot rewrite damaged blocks.")
    return ("what to do: restore the store from a backup: pcmem's own records are in the damaged blocks, so a copy "
            "(`pcmem migrate`) stops at them too. Keep the damaged file.")


def _count_what_can_be_read(db: duckdb.DuckDBPyConnection, report: CheckReport) -> None:
    side = connection.quiet(db.cursor())  # one statement per transaction: a damaged block aborts the one it meets
    try:
        for name, sql in (("scopes", "SELECT count(*) FROM memories"), ("revisions", "SELECT count(*) FROM revisions"),
                          ("entry_versions", "SELECT count(*) FROM entry_versions")):
            try:
                setattr(report, name, _count(side, sql))
            except duckdb.Error:
                pass  # the count itself needs a damaged block
    finally:
        side.close()


def _block_owners(db: duckdb.DuckDBPyConnection) -> tuple[dict[int, set[str]], list[str], set[int]]:
    """Which tables' column data each block holds (small segments share blocks), the tables whose layout DuckDB
    cannot list (it reads some of their data blocks for that, so one of them is damaged), and the metadata blocks.
    Index blocks are in none: DuckDB lists no index's blocks."""
    owners: dict[int, set[str]] = {}
    unreadable: list[str] = []
    names = sorted(connection.qualified_tables(db))
    side = connection.quiet(db.cursor())  # one statement per transaction (see _count_what_can_be_read)
    try:
        for name in names:
            try:
                rows = side.execute("SELECT block_id, additional_block_ids FROM "
                                    f"pragma_storage_info({connection.literal(name)})").fetchall()
            except duckdb.Error:
                unreadable.append(name)
                continue
            for block, extra in rows:
                for owned in [block, *(extra or [])]:
                    if owned is not None and owned >= 0:
                        owners.setdefault(owned, set()).add(name)
        try:
            metadata = {block for (block,) in side.execute("SELECT block_id FROM pragma_metadata_info()").fetchall()}
        except duckdb.Error:
            metadata = set()
    finally:
        side.close()
    return owners, unreadable, metadata


def _rebuilt_by_copy(table: str) -> bool:
    """A table ``pcmem migrate`` never reads: the copy builds its own full-text index."""
    return table.startswith(f"{fts_index.SCHEMA}.") or table == "main.fts_docs"


def repair(db: duckdb.DuckDBPyConnection, analyzer: str | None = None) -> None:
    """Rebuild every derived structure from the event log: head_entries, the full-text index (recreated when its
    schema is gone), the vector tables (recreated empty when dropped; ``pcmem reindex`` refills them) and every
    missing lookup index.

    Runs in one transaction, after :func:`indexes.rebuild` ran outside it: deleting rows through an index that lost
    some of them is a fatal DuckDB error.

    ``analyzer`` switches the index to another analyzer while rebuilding it.
    """
    if analyzer is not None:
        fts_index.record_analyzer(db, analyzer)
    tables = connection.qualified_tables(db)
    if "main.head_entries" not in tables:
        db.execute("CREATE TABLE head_entries (artifact_id VARCHAR NOT NULL, entry_id VARCHAR NOT NULL, "
                   "entry_version_id VARCHAR NOT NULL, state VARCHAR NOT NULL)")  # no key: see unkeyed.py
    db.execute("DELETE FROM head_entries")
    db.execute(f"INSERT INTO head_entries SELECT * FROM ({_EXPECTED_HEAD})")
    s = fts_index.SCHEMA
    db.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")
    db.execute("DROP TABLE IF EXISTS fts_docs")
    connection.load_fts(db)
    fts_index.create(db)
    fts_index.mark_rebuilt(db)
    rows = db.execute("SELECT v.entry_version_id, v.text FROM head_entries h JOIN entry_versions v "
                      "USING (entry_version_id) WHERE h.state = 'active'").fetchall()
    fts_index.add_documents(db, rows, fts_index.stored_analyzer(db))
    vectors.recreate_missing_tables(db)
    for table in vectors.TABLES.values():
        if f"main.{table}" in connection.qualified_tables(db):
            db.execute(f"DELETE FROM {table} WHERE entry_version_id NOT IN (SELECT entry_version_id FROM entry_versions)")
    indexes.create(db)  # every expected lookup index, including those a rebuilt table lost
