"""The full-text channel: DuckDB's FTS extension index, maintained incrementally.

Freshness design: ``PRAGMA create_fts_index`` builds a static index (its own tables ``docs``, ``terms``, ``dict`` and
``stats`` in schema ``fts_main_fts_docs``), and the extension's ``match_bm25`` macro scores queries by reading those
tables at query time. So instead of rebuilding the index after writes (≈ 4.5 s at 100k documents), every write
transaction updates exactly those tables for the documents it adds or removes — new rows in docs/terms, df counts in
dict, and the stats row — in the same transaction as the revision: the next search sees the write, a superseded or
retired version disappears at once, and a write costs O(its own terms), not O(index).

The index holds one document per *active head* entry version of every scope (docname = entry_version_id). Text is
pre-analysed by :mod:`pcmem.analysis` (the store's analyzer, recorded in pcmem_meta) and stored as space-separated
terms; the index is configured to split on whitespace only (no stemming, stopwords, accent stripping or lowering),
so queries analysed the same way match the same terms.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from pcmem.analysis import ANALYZERS, Analyzer
from pcmem.store.duckdb import connection
from pcmem.store.duckdb.arrow import registered

SCHEMA = "fts_main_fts_docs"


def create(db: duckdb.DuckDBPyConnection) -> None:
    """Create the (empty) index. ``fts_docs`` only declares the indexed column; rows live in the index tables."""
    db.execute("CREATE TABLE fts_docs (doc_key VARCHAR, body VARCHAR)")
    db.execute(
        "PRAGMA create_fts_index('fts_docs', 'doc_key', 'body', stemmer='none', stopwords='none', "
        r"ignore='\s+', strip_accents=0, lower=0, overwrite=1)"
    )


def create_lookup_indexes(db: duckdb.DuckDBPyConnection) -> None:
    """ART indexes for point lookups by term and by document name: a query's terms, a write's known terms and the
    documents of new entry versions are found without scanning the store-wide tables (see connection.in_list)."""
    from pcmem.store.duckdb import indexes  # the list of every expected index imports this module's SCHEMA

    indexes.create(db, SCHEMA)


def mark_rebuilt(db: duckdb.DuckDBPyConnection) -> None:
    """Give the rebuilt index a new generation: document and term ids start over, so every process's in-process
    postings (:mod:`~pcmem.store.duckdb.fts_cache`) must be read again."""
    import uuid

    db.execute("INSERT OR REPLACE INTO pcmem_meta VALUES ('fts_generation', ?)", [uuid.uuid4().hex])


def stored_analyzer(db: duckdb.DuckDBPyConnection) -> Analyzer:
    """The analyzer this store's index was built with (stores from before it was recorded used v1)."""
    row = db.execute("SELECT value FROM pcmem_meta WHERE key = 'fts_analyzer'").fetchone()
    return ANALYZERS[row[0] if row else "v1"]


def record_analyzer(db: duckdb.DuckDBPyConnection, name: str) -> None:
    db.execute("DELETE FROM pcmem_meta WHERE key = 'fts_analyzer'")
    db.execute("INSERT INTO pcmem_meta VALUES ('fts_analyzer', ?)", [name])


#: Up to this many documents a write finds and updates index rows through the lookup indexes (O(change)); a larger
#: batch (an import) joins its rows against the store-wide tables once, which is cheaper per document.
POINT_WRITES = 64


def add_documents(db: duckdb.DuckDBPyConnection, documents: Sequence[tuple[str, str]], analyzer: Analyzer) -> None:
    """Index ``(entry_version_id, text)`` pairs, analysed with the store's analyzer."""
    import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it
    if not documents:
        return
    analysed = [(version_id, analyzer.analyze(text)) for version_id, text in documents]
    first = db.execute(f"SELECT coalesce(max(docid), -1) + 1 FROM {SCHEMA}.docs").fetchone()[0]
    with registered(db, "pcmem_new_docs", pa.table({
        "docid": pa.array(range(first, first + len(analysed)), pa.int64()),
        "name": pa.array([version_id for version_id, _ in analysed], pa.string()),
        "len": pa.array([len(terms) for _, terms in analysed], pa.int64())})):
        db.execute(f"INSERT INTO {SCHEMA}.docs SELECT docid, name, len FROM pcmem_new_docs")
    if len(analysed) <= POINT_WRITES:
        _add_terms_by_lookups(db, analysed, first)
    else:
        _add_terms_by_joins(db, analysed, first)
    _shift_stats(db, len(analysed), sum(len(terms) for _, terms in analysed))


def _add_terms_by_lookups(db: duckdb.DuckDBPyConnection, analysed: list[tuple[str, list[str]]], first: int) -> None:
    """A few documents: known term ids by an index scan of ``dict``, new ids after the largest, rows built here."""
    import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it

    doc_frequency: dict[str, int] = {}
    for _, terms in analysed:
        for term in set(terms):
            doc_frequency[term] = doc_frequency.get(term, 0) + 1
    known: dict[str, int] = dict(db.execute(
        f"SELECT term, termid FROM {SCHEMA}.dict WHERE term IN {connection.in_list(doc_frequency)}").fetchall())
    if known:
        cases = " ".join(f"WHEN {connection.literal(t)} THEN {doc_frequency[t]}" for t in known)
        db.execute(f"UPDATE {SCHEMA}.dict SET df = df + CASE term {cases} END WHERE term IN {connection.in_list(known)}")
    termids = dict(known)
    fresh = sorted(term for term in doc_frequency if term not in known)
    if fresh:  # new ids in term order after the largest, as a rebuild by the join path would number them
        top = db.execute(f"SELECT coalesce(max(termid), -1) FROM {SCHEMA}.dict").fetchone()[0]
        termids.update({term: top + 1 + n for n, term in enumerate(fresh)})
        with registered(db, "pcmem_new_terms", pa.table({
            "termid": pa.array([termids[t] for t in fresh], pa.int64()), "term": pa.array(fresh, pa.string()),
            "df": pa.array([doc_frequency[t] for t in fresh], pa.int64())})):
            db.execute(f"INSERT INTO {SCHEMA}.dict SELECT termid, term, df FROM pcmem_new_terms")
    with registered(db, "pcmem_new_postings", pa.table({
        "docid": pa.array([first + i for i, (_, terms) in enumerate(analysed) for _ in terms], pa.int64()),
        "termid": pa.array([termids[term] for _, terms in analysed for term in terms], pa.int64())})):
        db.execute(f"INSERT INTO {SCHEMA}.terms SELECT docid, 0, termid FROM pcmem_new_postings")


def _add_terms_by_joins(db: duckdb.DuckDBPyConnection, analysed: list[tuple[str, list[str]]], first: int) -> None:
    import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it

    occurrences = pa.table(
        {
            "docid": pa.array([first + i for i, (_, terms) in enumerate(analysed) for _ in terms], pa.int64()),
            "term": pa.array([term for _, terms in analysed for term in terms], pa.string()),
        }
    )
    with registered(db, "pcmem_occurrences", occurrences):
        db.execute(
            f"""
            INSERT INTO {SCHEMA}.dict
            SELECT (SELECT coalesce(max(termid), -1) FROM {SCHEMA}.dict) + row_number() OVER (ORDER BY term), term, 0
            FROM (SELECT DISTINCT term FROM pcmem_occurrences) fresh
            WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.dict d WHERE d.term = fresh.term)
            """
        )
        db.execute(
            f"INSERT INTO {SCHEMA}.terms SELECT o.docid, 0, d.termid "
            f"FROM pcmem_occurrences o JOIN {SCHEMA}.dict d USING (term)"
        )
        db.execute(
            f"""
            UPDATE {SCHEMA}.dict d SET df = d.df + n.docs
            FROM (SELECT term, count(DISTINCT docid) AS docs FROM pcmem_occurrences GROUP BY term) n
            WHERE d.term = n.term
            """
        )


def remove_documents(db: duckdb.DuckDBPyConnection, entry_version_ids: Sequence[str]) -> None:
    """Drop documents by entry_version_id (those not indexed are ignored)."""
    if not entry_version_ids:
        return
    if len(entry_version_ids) <= POINT_WRITES:
        gone = db.execute(f"SELECT docid, len FROM {SCHEMA}.docs WHERE name IN "
                          f"{connection.in_list(entry_version_ids)}").fetchall()
        if not gone:
            return
        docids = "(" + ", ".join(str(int(docid)) for docid, _ in gone) + ")"
        # every filter below is one IN list on an indexed column: index scans, whatever the store's size
        counts = db.execute(f"SELECT termid, count(DISTINCT docid) FROM {SCHEMA}.terms WHERE docid IN {docids} "
                            "GROUP BY termid").fetchall()
        if counts:
            cases = " ".join(f"WHEN {int(termid)} THEN {int(n)}" for termid, n in counts)
            termids = "(" + ", ".join(str(int(termid)) for termid, _ in counts) + ")"
            db.execute(f"UPDATE {SCHEMA}.dict SET df = df - CASE termid {cases} END WHERE termid IN {termids}")
        db.execute(f"DELETE FROM {SCHEMA}.terms WHERE docid IN {docids}")
        db.execute(f"DELETE FROM {SCHEMA}.docs WHERE docid IN {docids}")
        _shift_stats(db, -len(gone), -sum(int(length) for _, length in gone))
        return
    _remove_by_joins(db, entry_version_ids)


def _remove_by_joins(db: duckdb.DuckDBPyConnection, entry_version_ids: Sequence[str]) -> None:
    import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it

    gone = pa.table({"name": pa.array(list(entry_version_ids), pa.string())})
    with registered(db, "pcmem_gone", gone):
        db.execute(
            f"CREATE OR REPLACE TEMP TABLE pcmem_gone_docs AS "
            f"SELECT docid, len FROM {SCHEMA}.docs JOIN pcmem_gone USING (name)"
        )
    removed, removed_len = db.execute("SELECT count(*), coalesce(sum(len), 0) FROM pcmem_gone_docs").fetchone()
    db.execute(
        f"""
        UPDATE {SCHEMA}.dict d SET df = d.df - n.docs
        FROM (SELECT termid, count(DISTINCT docid) AS docs FROM {SCHEMA}.terms
              WHERE docid IN (SELECT docid FROM pcmem_gone_docs) GROUP BY termid) n
        WHERE d.termid = n.termid
        """
    )
    db.execute(f"DELETE FROM {SCHEMA}.terms WHERE docid IN (SELECT docid FROM pcmem_gone_docs)")
    db.execute(f"DELETE FROM {SCHEMA}.docs WHERE docid IN (SELECT docid FROM pcmem_gone_docs)")
    db.execute("DROP TABLE pcmem_gone_docs")
    _shift_stats(db, -removed, -removed_len)


def _shift_stats(db: duckdb.DuckDBPyConnection, documents: int, length: int) -> None:
    """Move num_docs and avgdl by a change of ``documents`` documents totalling ``length`` terms: O(1), where a
    recount would scan every document of every scope (``pcmem check`` verifies them against a recount)."""
    if documents == 0:
        return
    db.execute(
        f"""UPDATE {SCHEMA}.stats SET
                avgdl = CASE WHEN num_docs + $n = 0 THEN NULL
                             ELSE (coalesce(avgdl, 0) * num_docs + $length) / (num_docs + $n) END,
                num_docs = num_docs + $n""",
        {"n": documents, "length": length},
    )
