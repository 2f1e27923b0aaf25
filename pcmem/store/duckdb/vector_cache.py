"""An in-process copy of each scope's head vectors as one numpy matrix, kept current by the event log.

DuckDB's exact ``array_cosine_distance`` scan is several times slower than a float32 matrix-vector product over the
same vectors (docs/benchmarks/speed.md). So the vector channel reads a per-scope matrix of the active head
versions. The matrix is stamped with the revision it reflects; a search at a newer head applies only the entry
events since that revision (O(change), also for writes made by other processes), inside the search's own
snapshot, so hits never mix revisions. Rows are unit-normalised, so a dot product is the cosine similarity.
Scopes are kept in a :class:`~pcmem.store.duckdb.scope_views.ScopeLRU` bounded by entries.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb

from pcmem.store.duckdb import connection
from pcmem.store.duckdb.ranking import best_positions
from pcmem.store.duckdb.scope_views import CatchUps, RowIds, ScopeLRU, head_moves
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import MemoryRef
from pcmem.types.search import Candidate

if TYPE_CHECKING:
    import numpy as np


def _unit(rows: np.ndarray) -> np.ndarray:
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


def _similarities(matrix: np.ndarray, unit_query: np.ndarray) -> np.ndarray:
    """One dot product per row, each computed the same way wherever the row sits in the matrix.

    BLAS matrix-vector kernels (``matrix @ query``) take a different code path for the last rows of a block, so two
    identical rows can get cosines differing in the last bit depending on their positions — and positions differ
    between a freshly loaded matrix and one kept current by swap-removes, i.e. between processes. ``einsum``'s
    plain loop computes every row alike: equal vectors get equal scores, and the identity tie-break decides.
    """
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    return np.einsum("ij,j->i", matrix, unit_query)


def _rows_that_can_rank(matrix: np.ndarray, unit_query: np.ndarray, limit: int) -> np.ndarray:
    """Every row that can be among the ``limit`` most similar by :func:`_similarities`, found with one BLAS
    matrix-vector product (2-3x faster than einsum over the whole scope).

    BLAS results differ from einsum's only in the last bits: for unit float32 vectors by at most δ ≈ dimension · ε.
    A row in einsum's top ``limit`` therefore scores at least (BLAS cut − 2δ) under BLAS, so keeping every row above
    the cut minus a margin of 4 · dimension · ε keeps all of them; their exact scores are computed afterwards.
    """
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    if len(matrix) <= limit:
        return np.arange(len(matrix))
    rough = matrix @ unit_query
    cut = np.partition(rough, len(rough) - limit)[len(rough) - limit]
    margin = 4 * matrix.shape[1] * float(np.finfo(np.float32).eps)
    return np.flatnonzero(rough >= cut - margin)


@dataclass
class _ScopeMatrix:
    profile: EmbeddingProfile
    revision: int
    matrix: np.ndarray  # capacity × dimension; rows [0, size) are live
    size: int = 0
    entries: RowIds = field(default_factory=RowIds)  # row → (entry_id, entry_version_id)
    row_of: dict[str, int] = field(default_factory=dict)  # entry_id → row
    missing: dict[str, str] = field(default_factory=dict)  # entry_id → version id whose vector was not stored yet

    def put(self, entry_id: str, version_id: str, vector: np.ndarray) -> None:
        import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
        self.drop(entry_id)
        if self.size == len(self.matrix):
            grown = np.empty((max(16, 2 * len(self.matrix)), self.matrix.shape[1]), dtype=np.float32)
            grown[: self.size] = self.matrix[: self.size]
            self.matrix = grown
        self.matrix[self.size] = vector
        self.entries.append(entry_id, version_id)
        self.row_of[entry_id] = self.size
        self.size += 1

    def drop(self, entry_id: str) -> None:
        """Swap-remove the entry's row: O(dimension), whatever the scope size."""
        self.missing.pop(entry_id, None)
        row = self.row_of.pop(entry_id, None)
        if row is None:
            return
        last = self.size - 1
        if row != last:
            self.matrix[row] = self.matrix[last]
            self.entries.move(row, last)
            self.row_of[self.entries.entry_ids[row]] = row
        self.entries.pop()
        self.size -= 1


class VectorCache:
    """Per-scope matrices for one store, shared by every thread of the process."""

    def __init__(self) -> None:
        self._scopes: ScopeLRU[_ScopeMatrix] = ScopeLRU()
        self._lock = threading.Lock()
        self._catch_ups = CatchUps()

    def invalidate(self) -> None:
        with self._lock:
            self._scopes.clear()

    def search(
        self, db: duckdb.DuckDBPyConnection, memory: MemoryRef, profile: EmbeddingProfile, query: np.ndarray,
        limit: int,
    ) -> list[Candidate]:
        """The ``limit`` most similar active head versions, ties bytewise on (artifact, entry, version)."""
        import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
        while True:
            state = self._view_at(db, memory, profile)
            with self._lock:  # matrices change in place: scored while no other thread can move this one
                if state.revision != memory.revision:
                    continue  # another thread moved it past this search's snapshot meanwhile: look again
                if state.size == 0:
                    return []
                unit_query = query.astype(np.float32) / (np.linalg.norm(query) or 1.0)
                matrix = state.matrix[: state.size]
                rows = _rows_that_can_rank(matrix, unit_query, limit)
                similarity = _similarities(matrix[rows], unit_query)  # exact for the few rows that can rank
                entries = state.entries
                best = best_positions(similarity, limit, lambda at: entries.at(rows[at].tolist()))
                picked = [(float(similarity[i]), entries[int(rows[i])]) for i in best]
                break
        artifact = memory.artifact_id
        return [Candidate(artifact, entry_id, version_id, score) for score, (entry_id, version_id) in picked]

    def load(self, db: duckdb.DuckDBPyConnection, memory: MemoryRef, profile: EmbeddingProfile) -> None:
        """Bring the scope's matrix to ``memory.revision`` now (what its next search would do first)."""
        self._view_at(db, memory, profile)

    def _view_at(self, db: duckdb.DuckDBPyConnection, memory: MemoryRef, profile: EmbeddingProfile) -> _ScopeMatrix:
        """The scope's matrix, brought to ``memory.revision`` and given the vectors stored since (the caller checks
        the revision again under the lock). As for the full-text views (fts_cache.FtsCache._view_at), DuckDB is
        read without the lock, which is held only to look a matrix up and to change it in memory."""
        with self._lock:
            state = self._scopes.get(memory.artifact_id)
            if state is not None and state.profile == profile and state.revision == memory.revision \
                    and not state.missing:
                return state
            current = state is not None and state.profile == profile and state.revision <= memory.revision
            since = state.revision if state is not None and current else None
            missing = dict(state.missing) if state is not None and current else {}
        if state is None or since is None:
            fresh = _load(db, memory, profile)  # this thread's own until it is published
            with self._lock:
                cached = self._scopes.get(memory.artifact_id)
                if cached is None or cached.profile != profile or cached.revision <= fresh.revision:
                    self._scopes.put(memory.artifact_id, fresh, fresh.size)
            return fresh  # an older snapshot than the cached matrix is served from its own copy, not cached
        with self._catch_ups.lead_or_wait(memory.artifact_id) as leading:
            if not leading:
                return state  # another thread brought it up meanwhile (the caller looks again)
            self._catch_up(db, memory, state, since, missing)
        return state

    def _catch_up(self, db: duckdb.DuckDBPyConnection, memory: MemoryRef, state: _ScopeMatrix, since: int,
                  missing: dict[str, str]) -> None:
        """Apply the entry events since ``since`` and the vectors stored since to ``state`` (see :meth:`_view_at`)."""
        moves = head_moves(db, memory, since) if since < memory.revision else []
        active = {entry_id: version_id for entry_id, version_id, entry_state in moves if entry_state == "active"}
        for entry_id, _version_id, _state in moves:
            missing.pop(entry_id, None)
        missing.update(active)
        found = _read_vectors(db, missing)
        with self._lock:
            if state.revision == since and self._scopes.get(memory.artifact_id) is state:
                for entry_id, _version_id, _state in moves:
                    state.drop(entry_id)
                state.missing.update(active)
                state.revision = memory.revision
                for entry_id, version_id, vector in found:
                    if state.missing.get(entry_id) == version_id:  # not filled by another thread meanwhile
                        state.missing.pop(entry_id)
                        state.put(entry_id, version_id, vector)
                self._scopes.put(memory.artifact_id, state, state.size)


#: DuckDB answers ``IN`` over at most this many constants with an index scan of the primary key (its
#: ``index_scan_max_count``); see :func:`_load`.
_INDEX_SCAN_KEYS = 2048

#: Rows copied into a scope's matrix per numpy call while it loads (see :func:`_fill`).
_COPY_ROWS = 1024


def _load(db: duckdb.DuckDBPyConnection, memory: MemoryRef, profile: EmbeddingProfile) -> _ScopeMatrix:
    """The scope's matrix, read in ``memory``'s snapshot.

    The vectors come from DuckDB as numpy arrays (``fetchnumpy``: one float32 array per row), never as Python floats:
    ``fetchall`` built 384 float objects per entry in one C call holding the GIL — an app's UI thread or asyncio loop
    stalled for the whole load of a large scope, and the transient lists cost more memory than the matrix.

    A scope of up to ``_INDEX_SCAN_KEYS`` entries reads its vectors by key, through the primary key's index. A join
    scanned the whole embeddings table: DuckDB skips blocks by min/max statistics, which keep 8 bytes of a string,
    and every id written within days starts alike (``ver_01m8``), so nothing was skipped — a small scope of a large
    store read most of the table's vectors into DuckDB's buffers. A larger scope is a sizeable part of the table
    anyway, and a long key list is slower than the scan.
    """
    heads = db.execute(
        "SELECT entry_id, entry_version_id FROM head_entries WHERE artifact_id = ? AND state = 'active' "
        "ORDER BY entry_id",
        [memory.artifact_id],
    ).fetchnumpy()
    entry_ids, version_ids = heads["entry_id"].tolist(), heads["entry_version_id"].tolist()
    vectors: Sequence[np.ndarray] | np.ndarray  # a list, or an object array of one array per row
    if len(version_ids) <= _INDEX_SCAN_KEYS:
        found = db.execute(
            f"SELECT entry_version_id, vec FROM embeddings WHERE entry_version_id IN {connection.in_list(version_ids)}",
        ).fetchnumpy() if version_ids else {"entry_version_id": [], "vec": []}
        vector_of = dict(zip(found["entry_version_id"], found["vec"], strict=True))
        kept = [row for row, version_id in enumerate(version_ids) if version_id in vector_of]
        present = RowIds([entry_ids[row] for row in kept], [version_ids[row] for row in kept])
        vectors = [vector_of[version_id] for version_id in present.version_ids]
    else:
        joined = db.execute(
            """SELECT h.entry_id, h.entry_version_id, e.vec FROM head_entries h
               JOIN embeddings e USING (entry_version_id)
               WHERE h.artifact_id = ? AND h.state = 'active' ORDER BY h.entry_id""",
            [memory.artifact_id],
        ).fetchnumpy()
        present = RowIds(joined["entry_id"].tolist(), joined["entry_version_id"].tolist())
        vectors = joined["vec"]
    state = _fill(_ScopeMatrix(profile, memory.revision, _empty(len(present), profile)), present, vectors)
    if len(present) < len(entry_ids):
        stored = set(present.version_ids)
        state.missing = {entry_id: version_id for entry_id, version_id in zip(entry_ids, version_ids, strict=True)
                         if version_id not in stored}
    return state


def _empty(rows: int, profile: EmbeddingProfile) -> np.ndarray:
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    return np.empty((max(16, rows), profile.dimension), np.float32)


def _fill(state: _ScopeMatrix, present: RowIds, vectors: Sequence[np.ndarray] | np.ndarray) -> _ScopeMatrix:
    """``state`` holding ``present``'s entries with their ``vectors`` (one array per row), unit-scaled.

    Copied ``_COPY_ROWS`` rows per numpy call: each call holds the GIL while it runs, and the interpreter lets other
    threads in only between calls."""
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    for start in range(0, len(present), _COPY_ROWS):
        block = vectors[start:start + _COPY_ROWS]
        state.matrix[start:start + len(block)] = _unit(np.stack(list(block)).astype(np.float32, copy=False))
    state.entries = present
    state.row_of = present.row_of()
    state.size = len(present)
    return state


def _read_vectors(db: duckdb.DuckDBPyConnection, versions: dict[str, str]) -> list[tuple[str, str, np.ndarray]]:
    """(entry_id, version_id, unit vector) of those of ``versions`` (entry id → version id) stored by now (as numpy
    arrays: see :func:`_load`)."""
    if not versions:
        return []
    entry_of = {version_id: entry_id for entry_id, version_id in versions.items()}
    found = db.execute(
        f"SELECT entry_version_id, vec FROM embeddings WHERE entry_version_id IN {connection.in_list(entry_of)}",
    ).fetchnumpy()
    return [(entry_of[version_id], version_id, _unit(vec.reshape(1, -1))[0])
            for version_id, vec in zip(found["entry_version_id"], found["vec"], strict=True)]
