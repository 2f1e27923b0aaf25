"""The vector channel: one embedding per entry version, searched by exact ``array_cosine_distance`` scan.

Vectors are stored as ``FLOAT[dimension]`` for the store's single embedding profile (model id, dimension,
normalisation). Changing the profile drops them; ``pcmem reindex`` embeds again. The query vector reaches DuckDB as a
one-row Arrow table: binding a 384-float list as a ``?`` parameter costs ~35 ms in the Python client (RECIPES.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb
import numpy as np
import pyarrow as pa

from pcmem.embedding.port import EmbeddingProfile
from pcmem.search.fusion import Candidate
from pcmem.store.duckdb.arrow import registered


def create(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        "CREATE TABLE embedding_profile (model_id VARCHAR NOT NULL, dimension INTEGER NOT NULL, "
        "normalized BOOLEAN NOT NULL)"
    )


def profile(db: duckdb.DuckDBPyConnection) -> EmbeddingProfile | None:
    row = db.execute("SELECT model_id, dimension, normalized FROM embedding_profile").fetchone()
    return None if row is None else EmbeddingProfile(model_id=row[0], dimension=row[1], normalized=row[2])


def set_profile(db: duckdb.DuckDBPyConnection, new: EmbeddingProfile) -> None:
    """Make ``new`` the store's profile; vectors of any other profile are dropped (they are derived data)."""
    if profile(db) == new:
        return
    db.execute("DELETE FROM embedding_profile")
    db.execute("INSERT INTO embedding_profile VALUES (?, ?, ?)", [new.model_id, new.dimension, new.normalized])
    db.execute("DROP TABLE IF EXISTS embeddings")
    db.execute(
        f"CREATE TABLE embeddings (entry_version_id VARCHAR PRIMARY KEY, vec FLOAT[{int(new.dimension)}] NOT NULL)"
    )


def _vector_column(vectors: np.ndarray) -> pa.FixedSizeListArray:
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


def store(db: duckdb.DuckDBPyConnection, vectors: Mapping[str, np.ndarray]) -> None:
    if not vectors:
        return
    ids = list(vectors)
    batch = pa.table({"entry_version_id": pa.array(ids, pa.string()),
                      "vec": _vector_column(np.stack([vectors[i] for i in ids]))})
    with registered(db, "pcmem_vectors", batch):
        db.execute("INSERT OR REPLACE INTO embeddings SELECT entry_version_id, vec FROM pcmem_vectors")


def missing(db: duckdb.DuckDBPyConnection, entry_version_ids: Sequence[str]) -> set[str]:
    """The ids among ``entry_version_ids`` that have no vector."""
    if not entry_version_ids:
        return set()
    wanted = pa.table({"entry_version_id": pa.array(list(entry_version_ids), pa.string())})
    with registered(db, "pcmem_wanted", wanted):
        rows = db.execute(
            "SELECT w.entry_version_id FROM pcmem_wanted w ANTI JOIN embeddings e USING (entry_version_id)"
        ).fetchall()
    return {version_id for (version_id,) in rows}


def complete(db: duckdb.DuckDBPyConnection, artifact_id: str) -> bool:
    """Whether every active head entry of the memory has a vector (SPEC §2: vector availability)."""
    row = db.execute(
        "SELECT count(*) FROM head_entries h ANTI JOIN embeddings e USING (entry_version_id) "
        "WHERE h.artifact_id = ? AND h.state = 'active'",
        [artifact_id],
    ).fetchone()
    return row[0] == 0


def search(db: duckdb.DuckDBPyConnection, artifact_id: str, query: np.ndarray, limit: int) -> list[Candidate]:
    """The ``limit`` active head versions most similar to ``query`` (cosine similarity, highest first)."""
    with registered(db, "pcmem_query", pa.table({"q": _vector_column(query.reshape(1, -1))})):
        rows = db.execute(
            f"""
            SELECT h.artifact_id, h.entry_id, h.entry_version_id,
                   1 - array_cosine_distance(e.vec, (SELECT q FROM pcmem_query)::FLOAT[{query.shape[0]}]) AS similarity
            FROM head_entries h JOIN embeddings e USING (entry_version_id)
            WHERE h.artifact_id = ? AND h.state = 'active'
            ORDER BY similarity DESC, h.artifact_id, h.entry_id, h.entry_version_id
            LIMIT ?
            """,
            [artifact_id, limit],
        ).fetchall()
    return [Candidate(a, e, v, float(similarity)) for a, e, v, similarity in rows]
