"""The vector channel on seekdb: engine kNN by cosine distance over one profile's table, restricted to a scope's
active head versions.

Each profile has its own table (see schema.py) whose ``active`` flag is kept equal to "this version is its entry's
active head version" by every write, so the restriction is a plain predicate on the table the HNSW index is on.

Exactness: an ANN index that is post-filtered by a predicate can return fewer than ``limit`` rows, and HNSW is
approximate anyway, while the DuckDB backend is exact — and results must be comparable across backends. So a scope
with up to :data:`EXACT_SCAN_MAX` active versions is searched exactly (``ORDER BY cosine_distance(...)`` over the
scope's rows, an index range scan on (artifact_id, active)).
Larger scopes use the HNSW index (``APPROXIMATE``) over-fetching 2×; if the filtered result comes back short the
query is re-run exactly, so the channel never silently returns fewer candidates than exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pcmem.store.seekdb.sql import Connection, chunks, in_list, insert_rows, parse_vector, quote, vector_literal
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.search import Candidate

EXACT_SCAN_MAX = 50_000


def search(
    db: Connection, table: str, artifact_id: str, query: np.ndarray, limit: int, active_count: int
) -> list[Candidate]:
    literal = vector_literal(query)
    where = f"artifact_id = {quote(artifact_id)} AND active = 1"
    if active_count > EXACT_SCAN_MAX:
        rows = db.run(
            f"SELECT entry_id, entry_version_id, cosine_distance(vec, {literal}) AS d FROM {table} WHERE {where} "
            f"ORDER BY cosine_distance(vec, {literal}) APPROXIMATE LIMIT {int(2 * limit)}"
        )
        if len(rows) >= limit:
            return _ranked(artifact_id, rows, limit)
    rows = db.run(
        f"SELECT entry_id, entry_version_id, cosine_distance(vec, {literal}) AS d FROM {table} WHERE {where} "
        f"ORDER BY d, entry_id, entry_version_id LIMIT {int(limit)}"
    )
    return _ranked(artifact_id, rows, limit)


def _ranked(artifact_id: str, rows: Sequence[tuple], limit: int) -> list[Candidate]:
    scored = [(1.0 - float(d), entry_id, version_id) for entry_id, version_id, d in rows if d is not None]
    scored.sort(key=lambda item: (-item[0], item[1].encode(), item[2].encode()))
    return [Candidate(artifact_id, entry_id, version_id, similarity) for similarity, entry_id, version_id in scored[:limit]]


def store(db: Connection, table: str, vectors: Mapping[str, np.ndarray]) -> None:
    """Insert or replace vectors; identity and the ``active`` flag come from the version and the head."""
    if not vectors:
        return
    ids = list(vectors)
    owners: dict[str, tuple[str, str, bool]] = {}
    for batch in chunks(ids):
        for version_id, artifact_id, entry_id, active in db.run(
            f"""SELECT v.entry_version_id, v.artifact_id, v.entry_id,
                       CASE WHEN h.state = 'active' AND h.entry_version_id = v.entry_version_id THEN 1 ELSE 0 END
                FROM entry_versions v
                LEFT JOIN head_entries h ON h.artifact_id = v.artifact_id AND h.entry_id = v.entry_id
                WHERE v.entry_version_id IN {in_list(batch)}"""
        ):
            owners[version_id] = (artifact_id, entry_id, bool(active))
    rows = [
        "(" + ", ".join([*map(quote, (version_id, *owners[version_id])), vector_literal(vectors[version_id])]) + ")"
        for version_id in ids
        if version_id in owners  # a vector for an unknown version is dropped
    ]
    insert_rows(db, f"REPLACE INTO {table} (entry_version_id, artifact_id, entry_id, active, vec)", rows)


def set_active(db: Connection, table: str, version_ids: Sequence[str], active: bool) -> None:
    for batch in chunks(list(version_ids)):
        db.run(f"UPDATE {table} SET active = {int(active)} WHERE entry_version_id IN {in_list(batch)}")


def missing(db: Connection, table: str | None, version_ids: Sequence[str]) -> set[str]:
    if table is None:
        return set(version_ids)
    present: set[str] = set()
    for batch in chunks(list(version_ids)):
        present.update(r[0] for r in db.run(f"SELECT entry_version_id FROM {table} WHERE entry_version_id IN {in_list(batch)}"))
    return set(version_ids) - present


def active_count(db: Connection, table: str, artifact_id: str) -> int:
    return int(db.run(f"SELECT count(*) FROM {table} WHERE artifact_id = {quote(artifact_id)} AND active = 1")[0][0])


def read(db: Connection, table: str, version_ids: Sequence[str]) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    for batch in chunks(list(version_ids), 500):
        for version_id, vec in db.run(f"SELECT entry_version_id, vec FROM {table} WHERE entry_version_id IN {in_list(batch)}"):
            found[version_id] = parse_vector(vec)
    return found


def profiles(db: Connection) -> dict[str, tuple[EmbeddingProfile, str]]:
    """Each role's embedding profile and the table its vectors are in."""
    return {
        role: (EmbeddingProfile(model_id=model_id, dimension=int(dimension), normalized=bool(normalized)), table)
        for role, model_id, dimension, normalized, table in db.run(
            "SELECT role, model_id, dimension, normalized, table_name FROM embedding_profiles"
        )
    }


def profile_tables(db: Connection) -> dict[str, str]:
    """Each role's vector table."""
    return {role: table for role, (_, table) in profiles(db).items()}
