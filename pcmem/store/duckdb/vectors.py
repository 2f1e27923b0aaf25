"""The vector channel: one embedding per entry version, searched by exact ``array_cosine_distance`` scan.

Vectors are stored as ``FLOAT[dimension]`` per embedding profile (model id, dimension, normalisation). The store has
one *active* profile (table ``embeddings``: what searches use) and, while ``pcmem reindex --embedder`` switches
models, one *pending* profile (table ``embeddings_pending``) filled next to it. The switch commits in one transaction
(drop the old table, rename the pending one), so a crash at any point leaves the old vectors usable and the new ones
resumable. A store may also keep one *secondary* profile (table ``embeddings_secondary``): a second, stronger
embedder's vectors that searches never use, only the embedding reranker (``pcmem reindex --rerank-embedder``).
The query vector reaches DuckDB as a one-row Arrow table: binding a 384-float list as a ``?`` parameter is slow in
the Python client (it inspects each element).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import duckdb

from pcmem.errors import StoreError
from pcmem.store.duckdb import rows
from pcmem.store.duckdb.arrow import registered
from pcmem.store.duckdb.connection import literal
from pcmem.store.duckdb.fts_index import POINT_WRITES
from pcmem.types.embedding import EmbeddingProfile

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

Role = Literal["active", "pending", "secondary"]
#: Every vector table by role. Erasure, reclaim, check and repair cover each of them.
TABLES: dict[Role, str] = {"active": "embeddings", "pending": "embeddings_pending", "secondary": "embeddings_secondary"}


def create(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        "CREATE TABLE embedding_profile (model_id VARCHAR NOT NULL, dimension INTEGER NOT NULL, "
        "normalized BOOLEAN NOT NULL)"
    )


def add_roles(db: duckdb.DuckDBPyConnection) -> None:
    """Migration 0004: a profile row is either the active one or the pending one of a switch in progress."""
    db.execute("ALTER TABLE embedding_profile ADD COLUMN role VARCHAR DEFAULT 'active'")


def profile(db: duckdb.DuckDBPyConnection, role: Role = "active") -> EmbeddingProfile | None:
    row = db.execute("SELECT model_id, dimension, normalized FROM embedding_profile WHERE role = ?",
                     [role]).fetchone()
    return None if row is None else EmbeddingProfile(model_id=row[0], dimension=row[1], normalized=row[2])


def table_for(db: duckdb.DuckDBPyConnection, wanted: EmbeddingProfile) -> str | None:
    """The table holding ``wanted``'s vectors, or ``None`` when it is not the active, pending or secondary profile."""
    for role, table in TABLES.items():
        if profile(db, role) == wanted:
            return table
    return None


def _install(db: duckdb.DuckDBPyConnection, new: EmbeddingProfile, role: Role) -> None:
    db.execute("DELETE FROM embedding_profile WHERE role = ?", [role])
    db.execute("INSERT INTO embedding_profile (model_id, dimension, normalized, role) VALUES (?, ?, ?, ?)",
               [new.model_id, new.dimension, new.normalized, role])
    db.execute(f"DROP TABLE IF EXISTS {TABLES[role]}")
    db.execute(f"CREATE TABLE {TABLES[role]} (entry_version_id VARCHAR PRIMARY KEY, "
               f"vec FLOAT[{int(new.dimension)}] NOT NULL)")


def recreate_missing_tables(db: duckdb.DuckDBPyConnection) -> None:
    """Create (empty) the vector table of each recorded profile whose table is gone (check --repair)."""
    tables = {name for (name,) in db.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'")
              .fetchall()}
    for role, table in TABLES.items():
        recorded = profile(db, role)
        if recorded is not None and table not in tables:
            db.execute(f"CREATE TABLE {table} (entry_version_id VARCHAR PRIMARY KEY, "
                       f"vec FLOAT[{int(recorded.dimension)}] NOT NULL)")


def adopt(db: duckdb.DuckDBPyConnection, new: EmbeddingProfile) -> None:
    """Make ``new`` the active profile of a store that has none; refuse to replace a different one."""
    current = profile(db)
    if current == new:
        return
    if current is not None:
        raise StoreError(f"the store's vectors are {current.describe()}; switching to {new.describe()} goes "
                         "through `pcmem reindex --embedder`, which keeps the old vectors until the switch commits")
    _install(db, new, "active")


def begin_switch(db: duckdb.DuckDBPyConnection, new: EmbeddingProfile) -> None:
    """Start (or resume) filling ``new`` next to the active profile; a store without vectors adopts it at once."""
    active = profile(db)
    if active is None:
        _install(db, new, "active")
        return
    if active == new:
        abandon_switch(db)
    elif profile(db, "pending") != new:
        _install(db, new, "pending")


def set_secondary(db: duckdb.DuckDBPyConnection, new: EmbeddingProfile | None) -> None:
    """Keep ``new``'s vectors as the secondary profile (a no-op when it already is); another secondary profile and its
    vectors are replaced; ``None`` drops the secondary profile. The active profile cannot be its own secondary."""
    if new is not None and new == profile(db):
        raise StoreError(f"{new.describe()} is the store's active profile: the embedding reranker already reads its "
                         "vectors; a secondary profile is for a second, different embedder")
    if new is None:
        db.execute("DELETE FROM embedding_profile WHERE role = 'secondary'")
        db.execute(f"DROP TABLE IF EXISTS {TABLES['secondary']}")
    elif profile(db, "secondary") != new:
        _install(db, new, "secondary")


def abandon_switch(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("DELETE FROM embedding_profile WHERE role = 'pending'")
    db.execute(f"DROP TABLE IF EXISTS {TABLES['pending']}")


def count_missing(db: duckdb.DuckDBPyConnection, table: str) -> int:
    """Active head versions (all scopes) without a vector in ``table``."""
    return db.execute(
        f"SELECT count(*) FROM head_entries h ANTI JOIN {table} e USING (entry_version_id) WHERE h.state = 'active'"
    ).fetchone()[0]


def commit_switch(db: duckdb.DuckDBPyConnection, new: EmbeddingProfile) -> bool:
    """Make the pending ``new`` active if every active head version has its vector; the caller's transaction makes
    the table swap atomic."""
    pending = profile(db, "pending")
    if pending is None and profile(db) == new:
        return True  # already committed (a resumed run after the commit)
    if pending != new:
        raise StoreError(f"{new.describe()} is not the pending embedding profile of this store")
    if count_missing(db, TABLES["pending"]):
        return False
    db.execute(f"DROP TABLE {TABLES['active']}")
    db.execute(f"ALTER TABLE {TABLES['pending']} RENAME TO {TABLES['active']}")
    db.execute("DELETE FROM embedding_profile WHERE role = 'active'")
    db.execute("UPDATE embedding_profile SET role = 'active' WHERE role = 'pending'")
    if profile(db, "secondary") == new:
        set_secondary(db, None)  # the store now searches with it: a second copy of the same vectors serves nothing
    return True


def _vector_column(vectors: np.ndarray) -> pa.FixedSizeListArray:
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


def store(db: duckdb.DuckDBPyConnection, vectors: Mapping[str, np.ndarray], table: str = TABLES["active"], *,
          replace: bool = True) -> None:
    """Store vectors by entry version id; ``replace=False`` when none of them can be stored yet (a write's new
    versions): a plain insert costs a fraction of what ``INSERT OR REPLACE`` costs for one row."""
    if not vectors:
        return
    ids = list(vectors)
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    if len(ids) <= POINT_WRITES:  # a point write: literals (see rows.py), and no pyarrow import for a cold CLI write
        db.execute(point_insert(vectors, table, replace=replace))
        return
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
    batch = pa.table({"entry_version_id": pa.array(ids, pa.string()),
                      "vec": _vector_column(np.stack([vectors[i] for i in ids]))})
    with registered(db, "pcmem_vectors", batch):
        db.execute(f"{verb} INTO {table} SELECT entry_version_id, vec FROM pcmem_vectors")


def point_insert(vectors: Mapping[str, np.ndarray], table: str = TABLES["active"], *, replace: bool = True) -> str:
    """A few vectors (see :func:`store`) as one statement of literals, for a write that runs it with its others."""
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    return (f"{verb} INTO {table} VALUES "
            + ", ".join(f"({literal(i)}, {rows.vector_value(vector)})" for i, vector in vectors.items()))


def missing(db: duckdb.DuckDBPyConnection, entry_version_ids: Sequence[str]) -> set[str]:
    """The ids among ``entry_version_ids`` that have no vector."""
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it
    if not entry_version_ids:
        return set()
    wanted = pa.table({"entry_version_id": pa.array(list(entry_version_ids), pa.string())})
    with registered(db, "pcmem_wanted", wanted):
        rows = db.execute(
            "SELECT w.entry_version_id FROM pcmem_wanted w ANTI JOIN embeddings e USING (entry_version_id)"
        ).fetchall()
    return {version_id for (version_id,) in rows}


def complete(db: duckdb.DuckDBPyConnection, artifact_id: str) -> bool:
    """Whether every active head entry of the memory has a vector (what vector search needs)."""
    row = db.execute(
        "SELECT count(*) FROM head_entries h ANTI JOIN embeddings e USING (entry_version_id) "
        "WHERE h.artifact_id = ? AND h.state = 'active'",
        [artifact_id],
    ).fetchone()
    return row[0] == 0
