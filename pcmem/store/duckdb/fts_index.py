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
from typing import TYPE_CHECKING

import duckdb

from pcmem.analysis import ANALYZERS, Analyzer
from pcmem.store.duckdb.arrow import registered
from pcmem.types.search import Candidate

if TYPE_CHECKING:
    pass

SCHEMA = "fts_main_fts_docs"


def create(db: duckdb.DuckDBPyConnection) -> None:
    """Create the (empty) index. ``fts_docs`` only declares the indexed column; rows live in the index tables."""
    db.execute("CREATE TABLE fts_docs (doc_key VARCHAR, body VARCHAR)")
    db.execute(
        "PRAGMA create_fts_index('fts_docs', 'doc_key', 'body', stemmer='none', stopwords='none', "
        r"ignore='\s+', strip_accents=0, lower=0, overwrite=1)"
    )


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


def add_documents(db: duckdb.DuckDBPyConnection, documents: Sequence[tuple[str, str]], analyzer: Analyzer) -> None:
    """Index ``(entry_version_id, text)`` pairs, analysed with the store's analyzer."""
    import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it
    if not documents:
        return
    analysed = [(version_id, analyzer.analyze(text)) for version_id, text in documents]
    first = db.execute(f"SELECT coalesce(max(docid), -1) + 1 FROM {SCHEMA}.docs").fetchone()[0]
    new_docs = pa.table(
        {
            "docid": pa.array(range(first, first + len(analysed)), pa.int64()),
            "name": pa.array([version_id for version_id, _ in analysed], pa.string()),
            "len": pa.array([len(terms) for _, terms in analysed], pa.int64()),
        }
    )
    occurrences = pa.table(
        {
            "docid": pa.array([first + i for i, (_, terms) in enumerate(analysed) for _ in terms], pa.int64()),
            "term": pa.array([term for _, terms in analysed for term in terms], pa.string()),
        }
    )
    added_len = sum(len(terms) for _, terms in analysed)
    with registered(db, "pcmem_new_docs", new_docs), registered(db, "pcmem_occurrences", occurrences):
        db.execute(f"INSERT INTO {SCHEMA}.docs SELECT docid, name, len FROM pcmem_new_docs")
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
    _shift_stats(db, len(analysed), added_len)


def remove_documents(db: duckdb.DuckDBPyConnection, entry_version_ids: Sequence[str]) -> None:
    """Drop documents by entry_version_id (those not indexed are ignored)."""
    import pyarrow as pa  # lazy: importing pyarrow costs ~100 ms, a search never needs it
    if not entry_version_ids:
        return
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


# BM25 exactly as the extension's match_bm25 macro computes it (k1 = 1.2, b = 0.75, its log and +0.5 smoothing),
# over the same index tables, but in one pass over only the documents that contain a query term, with the count of
# distinct matched terms that admission needs. The macro itself is evaluated per document and costs ~30 ms even on
# a tiny store; tests/test_fts_index.py checks that both give identical scores.
#
# Determinism: a plain ``sum()`` adds a document's per-term contributions in whatever order DuckDB's parallel hash
# aggregate meets them, so two documents with the same terms (equal scores on paper) could differ in the last bit
# and their order — and RRF ranks — changed from one process to the next. The contributions are summed in sorted
# order instead (``list_sum(list_sort(list(...)))``): the same multiset of contributions always gives the same
# double, so equal scores are equal and the identity tie-break of the ORDER BY decides.
_BM25_K1 = 1.2
_BM25_B = 0.75
_SEARCH_SQL = f"""
WITH query_terms AS (
    SELECT termid, df FROM {SCHEMA}.dict WHERE term IN (SELECT unnest($terms)) AND df > 0
), term_frequencies AS (
    SELECT t.docid, t.termid, count(*) AS tf FROM {SCHEMA}.terms t JOIN query_terms USING (termid) GROUP BY ALL
), scored AS (
    SELECT f.docid,
           list_sum(list_sort(list(log((((SELECT num_docs FROM {SCHEMA}.stats) - q.df) + 0.5) / (q.df + 0.5) + 1)
               * ((f.tf * ({_BM25_K1} + 1))
                  / (f.tf + {_BM25_K1} * ((1 - {_BM25_B}) + {_BM25_B} * (d.len / (SELECT avgdl FROM {SCHEMA}.stats))))))))
               AS score,
           count(*) AS matched_terms
    FROM term_frequencies f JOIN query_terms q USING (termid) JOIN {SCHEMA}.docs d USING (docid)
    GROUP BY f.docid
)
SELECT h.artifact_id, h.entry_id, h.entry_version_id, s.score, s.matched_terms
FROM scored s JOIN {SCHEMA}.docs d USING (docid) JOIN head_entries h ON h.entry_version_id = d.name
WHERE h.artifact_id = $artifact AND h.state = 'active'
ORDER BY s.score DESC, h.artifact_id, h.entry_id, h.entry_version_id
LIMIT $limit
"""


def search(db: duckdb.DuckDBPyConnection, artifact_id: str, terms: Sequence[str], limit: int) -> list[Candidate]:
    """The top ``limit`` active head versions of one memory by BM25, ties bytewise on (artifact, entry, version).

    Each candidate carries the number of distinct query terms it contains, which admission needs.
    """
    if not terms:
        return []
    rows = db.execute(_SEARCH_SQL, {"terms": list(terms), "artifact": artifact_id, "limit": limit}).fetchall()
    return [Candidate(a, e, v, float(score), int(matched)) for a, e, v, score, matched in rows]
