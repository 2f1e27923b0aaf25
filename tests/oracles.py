"""Reference implementations the DuckDB backend is checked against: slow, obviously right, and test-only.

They read the store file through their own connection (never the backend's private transaction), so a test compares
what the backend answers through its port with what the engine computes from the same committed tables.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from pcmem.store.duckdb import connection, fts_index
from pcmem.types.search import Candidate


@contextmanager
def reading(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection of our own to the store file (the FTS extension loaded)."""
    db = connection.connect(Path(path))
    connection.load_fts(db)  # match_bm25 is the extension's macro
    try:
        yield db
    finally:
        db.close()


def extension_scores(db: duckdb.DuckDBPyConnection, artifact_id: str, terms: Sequence[str]) -> dict[str, float]:
    """BM25 scores from the FTS extension's own ``match_bm25`` macro over the active head versions."""
    rows = db.execute(
        f"SELECT h.entry_version_id, {fts_index.SCHEMA}.match_bm25(h.entry_version_id, $query) FROM head_entries h "
        "WHERE h.artifact_id = $artifact AND h.state = 'active'",
        {"query": " ".join(terms), "artifact": artifact_id},
    ).fetchall()
    return {version_id: float(score) for version_id, score in rows if score is not None}


def exact_vector_search(db: duckdb.DuckDBPyConnection, artifact_id: str, query: np.ndarray, limit: int) -> list[Candidate]:
    """The ``limit`` active head versions most similar to ``query`` by DuckDB's exact ``array_cosine_distance``."""
    column = pa.FixedSizeListArray.from_arrays(pa.array(query.reshape(-1).astype(np.float32)), query.shape[0])
    db.register("oracle_query", pa.table({"q": column}))
    try:
        rows = db.execute(
            f"""
            SELECT h.artifact_id, h.entry_id, h.entry_version_id,
                   1 - array_cosine_distance(e.vec, (SELECT q FROM oracle_query)::FLOAT[{query.shape[0]}]) AS similarity
            FROM head_entries h JOIN embeddings e USING (entry_version_id)
            WHERE h.artifact_id = ? AND h.state = 'active'
            ORDER BY similarity DESC, h.artifact_id, h.entry_id, h.entry_version_id
            LIMIT ?
            """,
            [artifact_id, limit],
        ).fetchall()
    finally:
        db.unregister("oracle_query")
    return [Candidate(a, e, v, float(similarity)) for a, e, v, similarity in rows]


# BM25 exactly as the extension's match_bm25 macro (k1 = 1.2, b = 0.75, its log and +0.5 smoothing) in one SQL pass
# over the index tables, with the distinct matched-term count admission needs: the search path before the in-process
# postings of pcmem.store.duckdb.fts_cache, which must give bit-identical scores and order. A document's parts are
# summed in sorted order (list_sum(list_sort(...))) so equal scores are exactly equal and the identity tie-break
# decides.
_BM25_K1 = 1.2
_BM25_B = 0.75
_SQL_BM25 = f"""
WITH query_terms AS (
    SELECT termid, df FROM {fts_index.SCHEMA}.dict WHERE term IN (SELECT unnest($terms)) AND df > 0
), term_frequencies AS (
    SELECT t.docid, t.termid, count(*) AS tf FROM {fts_index.SCHEMA}.terms t JOIN query_terms USING (termid) GROUP BY ALL
), scored AS (
    SELECT f.docid,
           list_sum(list_sort(list(log((((SELECT num_docs FROM {fts_index.SCHEMA}.stats) - q.df) + 0.5) / (q.df + 0.5) + 1)
               * ((f.tf * ({_BM25_K1} + 1))
                  / (f.tf + {_BM25_K1} * ((1 - {_BM25_B}) + {_BM25_B} * (d.len / (SELECT avgdl FROM {fts_index.SCHEMA}.stats))))))))
               AS score,
           count(*) AS matched_terms
    FROM term_frequencies f JOIN query_terms q USING (termid) JOIN {fts_index.SCHEMA}.docs d USING (docid)
    GROUP BY f.docid
)
SELECT h.artifact_id, h.entry_id, h.entry_version_id, s.score, s.matched_terms
FROM scored s JOIN {fts_index.SCHEMA}.docs d USING (docid) JOIN head_entries h ON h.entry_version_id = d.name
WHERE h.artifact_id = $artifact AND h.state = 'active'
ORDER BY s.score DESC, h.artifact_id, h.entry_id, h.entry_version_id
LIMIT $limit
"""


def sql_bm25_search(db: duckdb.DuckDBPyConnection, artifact_id: str, terms: Sequence[str], limit: int
                    ) -> list[Candidate]:
    """The top ``limit`` active head versions of one memory by BM25, ties bytewise on (artifact, entry, version).

    Each candidate carries the number of distinct query terms it contains, which admission needs.
    """
    if not terms:
        return []
    rows = db.execute(_SQL_BM25, {"terms": list(terms), "artifact": artifact_id, "limit": limit}).fetchall()
    return [Candidate(a, e, v, float(score), int(matched)) for a, e, v, score, matched in rows]


def plainly_valid(raw: str) -> bool:
    """An oracle independent of the validator: some letter or digit, no control character or lone surrogate, and
    well under the byte limit. Such text must be accepted, so a property test that tolerates refusals cannot pass by
    refusing everything."""
    return (any(char.isalnum() for char in raw) and len(raw) <= 2000
            and not any(unicodedata.category(char) in ("Cc", "Cs") for char in raw))
