"""Reference implementations the DuckDB backend is checked against: slow, obviously right, and test-only.

They read the store file through their own connection (never the backend's private transaction), so a test compares
what the backend answers through its port with what the engine computes from the same committed tables.
"""

from __future__ import annotations

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
