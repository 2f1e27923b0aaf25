"""An in-process copy of each scope's full-text postings, kept current by the event log (as the vector matrix is).

Why: the persisted index (:mod:`~pcmem.store.duckdb.fts_index`, DuckDB's FTS extension tables) is one index for the
whole store, so a query that joins its terms against the ``terms`` table pays for every scope's documents: a small
scope in a large store searches as slowly as the whole store. The DuckDB file stays the only source of truth: this view
holds, per scope, each active head document's length and term frequencies (read from those tables), stamped with
the head revision it reflects; a search at a newer head applies only the entry events since (O(change), writes of
other processes included), inside the search's own snapshot. Store-wide statistics — document count, average length
and each query term's document frequency — are read from the index in that same snapshot on every search, so scores
stay exactly those of the extension's ``match_bm25`` (see :func:`score`).

Layout per scope: a compressed posting list per term id (CSR: sorted term ids, offsets, slots, tfs) plus a small
delta of documents added since it was built; a removed document only clears its slot's ``alive`` flag. The CSR is
rebuilt from live postings when the delta or the dead slots grow past a quarter of it, so updates stay O(change)
amortised. Scopes are kept in a :class:`~pcmem.store.duckdb.scope_views.ScopeLRU` bounded by entries.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb

from pcmem.store.duckdb import connection
from pcmem.store.duckdb.fts_index import SCHEMA
from pcmem.store.duckdb.ranking import best_positions
from pcmem.store.duckdb.scope_views import CatchUps, RowIds, ScopeLRU, head_moves
from pcmem.types.memory import MemoryRef
from pcmem.types.search import Candidate

if TYPE_CHECKING:
    import numpy as np

_BM25_K1 = 1.2
_BM25_B = 0.75


#: num_docs, avgdl and the index generation, store-wide.
IndexTotals = tuple[int, float | None, str | None]


@dataclass
class IndexStats:
    """The store-wide statistics BM25 needs, read in the search's snapshot."""

    num_docs: int
    avgdl: float
    generation: str | None  # changes when the index is rebuilt (ids start over)
    query: list[tuple[int, int]]  # (termid, df) of each distinct query term present in the store (df > 0)

    @classmethod
    def of(cls, totals: IndexTotals, terms: Iterable[tuple[int, int] | None]) -> IndexStats | None:
        """From the index totals and each query term's (termid, df) or None; None when nothing can match."""
        query = sorted(term for term in terms if term is not None)
        num_docs, avgdl, generation = totals
        if not query or not num_docs or avgdl is None:
            return None
        return cls(num_docs, float(avgdl), generation, query)


def read_terms(db: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> dict[str, tuple[int, int] | None]:
    """One statement: for each of ``terms``, (termid, df), or None when no document has it — what a search reads
    when the index totals are known already (its terms are new to the memo): ~half the cost of the three parts."""
    rows = db.execute(
        f"SELECT term, termid, df FROM {SCHEMA}.dict WHERE term IN {connection.in_list(terms)} AND df > 0"
    ).fetchall()
    found: dict[str, tuple[int, int] | None] = dict.fromkeys(terms)
    for term, termid, count in rows:
        found[term] = (int(termid), int(count))
    return found


def read_index_terms(db: duckdb.DuckDBPyConnection, terms: Sequence[str]
                     ) -> tuple[IndexTotals, dict[str, tuple[int, int] | None]]:
    """One statement: the index totals and, for each of ``terms``, (termid, df), or None when no document has it
    (the terms' ids and frequencies are an index scan of ``dict``)."""
    rows = db.execute(
        f"""SELECT 0, term, termid, df, NULL::DOUBLE, NULL::VARCHAR FROM {SCHEMA}.dict
                WHERE term IN {connection.in_list(terms)} AND df > 0
            UNION ALL SELECT 1, NULL, NULL, num_docs, avgdl, NULL FROM {SCHEMA}.stats
            UNION ALL SELECT 2, NULL, NULL, NULL, NULL, value FROM pcmem_meta WHERE key = 'fts_generation'"""
    ).fetchall()
    found: dict[str, tuple[int, int] | None] = dict.fromkeys(terms)
    num_docs, avgdl, generation = 0, None, None
    for kind, term, termid, count, average, value in rows:
        if kind == 0:
            found[term] = (int(termid), int(count))
        elif kind == 1:
            num_docs, avgdl = int(count or 0), average
        else:
            generation = value
    return (num_docs, avgdl, generation), found


@dataclass
class _ScopePostings:
    revision: int
    generation: str | None
    entries: RowIds = field(default_factory=RowIds)  # slot → (entry_id, entry_version_id)
    slot_of: dict[str, int] = field(default_factory=dict)  # entry_id → its live slot
    lengths: list[int] = field(default_factory=list)  # slot → document length (terms)
    dead: set[int] = field(default_factory=set)
    # CSR over term ids, built by compact(): postings of term_ids[i] are slots/tfs[offsets[i]:offsets[i + 1]]
    term_ids: np.ndarray | None = None
    offsets: np.ndarray | None = None
    slots: np.ndarray | None = None
    tfs: np.ndarray | None = None
    delta: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # termid → [(slot, tf)] since compact()
    delta_size: int = 0
    # derived, rebuilt lazily when stale
    _alive: np.ndarray | None = None
    _length_array: np.ndarray | None = None

    @property
    def live(self) -> int:
        return len(self.slot_of)

    def extend(self, entry_ids: list[str], version_ids: list[str], lengths: list[int]) -> None:
        """A new slot for each entry's document, in order (their postings come with :meth:`add_postings`)."""
        for entry_id in entry_ids:
            self.remove(entry_id)
        first = len(self.entries)
        self.slot_of.update(zip(entry_ids, range(first, first + len(entry_ids)), strict=True))
        self.entries.extend(entry_ids, version_ids)
        self.lengths.extend(lengths)
        self._alive = self._length_array = None

    def add_postings(self, terms: np.ndarray, slots: np.ndarray, tfs: np.ndarray) -> None:
        for termid, slot, tf in zip(terms.tolist(), slots.tolist(), tfs.tolist(), strict=True):
            self.delta.setdefault(termid, []).append((slot, tf))
        self.delta_size += len(terms)

    def remove(self, entry_id: str) -> None:
        slot = self.slot_of.pop(entry_id, None)
        if slot is not None:
            self.dead.add(slot)
            self._alive = None

    def needs_compaction(self) -> bool:
        base = 0 if self.slots is None else len(self.slots)
        return self.delta_size > max(256, base // 4) or len(self.dead) > max(64, self.live // 4)

    def compact(self) -> None:
        """Rebuild the CSR from live postings, renumbering slots densely (O(scope postings))."""
        import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

        triples_term, triples_slot, triples_tf = [], [], []
        if self.slots is not None and self.term_ids is not None and self.offsets is not None and self.tfs is not None:
            counts = np.diff(self.offsets)
            triples_term.append(np.repeat(self.term_ids, counts))
            triples_slot.append(self.slots)
            triples_tf.append(self.tfs)
        if self.delta:
            flat = [(termid, slot, tf) for termid, items in self.delta.items() for slot, tf in items]
            arr = np.asarray(flat, dtype=np.int64).reshape(-1, 3)
            triples_term.append(arr[:, 0])
            triples_slot.append(arr[:, 1])
            triples_tf.append(arr[:, 2])
        renumber = np.full(len(self.entries), -1, dtype=np.int64)
        keep = sorted(self.slot_of.values())
        renumber[keep] = np.arange(len(keep))
        self.entries = self.entries.keep(keep)
        self.lengths = [self.lengths[s] for s in keep]
        self.slot_of = self.entries.row_of()
        self.dead = set()
        self.delta, self.delta_size = {}, 0
        if not triples_term:
            self.build(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
            return
        slots = renumber[np.concatenate(triples_slot)]
        live = slots >= 0
        self.build(np.concatenate(triples_term)[live], slots[live], np.concatenate(triples_tf)[live])

    def build(self, terms: np.ndarray, slots: np.ndarray, tfs: np.ndarray) -> None:
        """Make these live postings the CSR (the delta must be empty)."""
        import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

        order = np.lexsort((slots, terms))
        terms, slots, tfs = terms[order], slots[order], tfs[order]
        self.term_ids, starts = np.unique(terms, return_index=True)
        self.offsets = np.append(starts, len(terms)).astype(np.int64)
        self.slots = slots.astype(np.int64)
        self.tfs = tfs.astype(np.int64)
        self._alive = self._length_array = None

    def postings(self, termid: int) -> tuple[np.ndarray, np.ndarray]:
        """Live (slots, tfs) of one term."""
        import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

        parts_slots, parts_tfs = [], []
        if self.term_ids is not None and self.offsets is not None and self.slots is not None and self.tfs is not None:
            i = int(np.searchsorted(self.term_ids, termid))
            if i < len(self.term_ids) and self.term_ids[i] == termid:
                start, end = self.offsets[i], self.offsets[i + 1]
                parts_slots.append(self.slots[start:end])
                parts_tfs.append(self.tfs[start:end])
        extra = self.delta.get(termid)
        if extra:
            arr = np.asarray(extra, dtype=np.int64)
            parts_slots.append(arr[:, 0])
            parts_tfs.append(arr[:, 1])
        if not parts_slots:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        slots = np.concatenate(parts_slots) if len(parts_slots) > 1 else parts_slots[0]
        tfs = np.concatenate(parts_tfs) if len(parts_tfs) > 1 else parts_tfs[0]
        if self.dead:
            alive = self.alive()[slots]
            slots, tfs = slots[alive], tfs[alive]
        return slots, tfs

    def alive(self) -> np.ndarray:
        import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

        if self._alive is None:
            alive = np.ones(len(self.entries), dtype=bool)
            if self.dead:
                alive[list(self.dead)] = False
            self._alive = alive
        return self._alive

    def length_array(self) -> np.ndarray:
        import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

        if self._length_array is None:
            self._length_array = np.asarray(self.lengths, dtype=np.int64)
        return self._length_array


def score(state: _ScopePostings, stats: IndexStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(slots, scores, matched term counts) of every live document containing a query term.

    BM25 exactly as the extension's ``match_bm25`` and :data:`fts_index._SEARCH_SQL` compute it, operation by
    operation in IEEE doubles: idf = log10(((N − df) + 0.5) / (df + 0.5) + 1); a term's part = idf · (tf · 2.2 /
    (tf + 1.2 · (0.25 + 0.75 · (len / avgdl)))), where tf · 2.2 is DuckDB's exact decimal product rounded once
    ((22 · tf) / 10). A document's parts are summed in ascending order, one at a time (``list_sum(list_sort(...))``):
    the same parts always give the same double, so ties are exact and break on identity.
    """
    import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

    lengths = state.length_array()
    columns: list[tuple[np.ndarray, np.ndarray]] = []
    for termid, df in stats.query:
        slots, tfs = state.postings(termid)
        if len(slots) == 0:
            continue
        idf = math.log10(((stats.num_docs - df) + 0.5) / (df + 0.5) + 1)
        norm = _BM25_K1 * ((1 - _BM25_B) + _BM25_B * (lengths[slots] / stats.avgdl))
        parts = idf * (((tfs * 22) / 10) / (tfs + norm))
        columns.append((slots, parts))
    if not columns:
        empty = np.empty(0, np.int64)
        return empty, np.empty(0, np.float64), empty
    docs, matrix = _parts_by_document(columns, len(state.entries))
    matched = np.count_nonzero(matrix, axis=1)
    matrix.sort(axis=1)  # absent terms are 0.0 and sort first; 0.0 + x == x, so the sum is the sorted parts' sum
    total = matrix[:, 0].copy()
    for column in range(1, matrix.shape[1]):
        total += matrix[:, column]
    return docs, total, matched


def _parts_by_document(columns: list[tuple[np.ndarray, np.ndarray]], slot_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(the documents containing a term, ascending slots; their parts, one column per term, 0.0 where absent).

    Where the postings cover a good share of the scope's slots, the parts are scattered into a row per slot and the
    empty rows dropped (a few vectorised passes); otherwise the documents are found by ``np.unique``, which sorts the
    postings (a sizeable part of a warm search when every document holds a term). Both give the same documents in
    the same order and the same parts (a part is never 0.0: idf > 0 and tf ≥ 1)."""
    import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

    postings = sum(len(slots) for slots, _ in columns)
    if slot_count <= 4 * postings:
        dense = np.zeros((slot_count, len(columns)), dtype=np.float64)
        for column, (slots, parts) in enumerate(columns):
            dense[slots, column] = parts
        docs = np.flatnonzero(dense.any(axis=1))
        return docs, dense[docs]
    every = np.concatenate([slots for slots, _ in columns])
    docs, inverse = np.unique(every, return_inverse=True)
    matrix = np.zeros((len(docs), len(columns)), dtype=np.float64)
    start = 0
    for column, (slots, parts) in enumerate(columns):
        matrix[inverse[start:start + len(slots)], column] = parts
        start += len(slots)
    return docs, matrix


class FtsCache:
    """Per-scope postings for one store, shared by every thread of the process."""

    def __init__(self) -> None:
        self._scopes: ScopeLRU[_ScopePostings] = ScopeLRU()
        self._lock = threading.Lock()
        self._catch_ups = CatchUps()

    def invalidate(self) -> None:
        with self._lock:
            self._scopes.clear()

    def search(self, db: duckdb.DuckDBPyConnection, memory: MemoryRef, stats: IndexStats, limit: int
               ) -> list[Candidate]:
        """The top ``limit`` active head versions of the scope by BM25 under ``stats`` (read in the same snapshot as
        ``memory``), ties bytewise on (artifact, entry, version), each with the number of distinct query terms it
        contains."""
        while True:
            state = self._view_at(db, memory, stats.generation)
            with self._lock:  # views change in place: scored while no other thread can move this one
                if state.revision != memory.revision:
                    continue  # another thread moved it past this search's snapshot meanwhile: look again
                slots, scores, matched = score(state, stats)
                entries = state.entries
                best = best_positions(scores, limit, lambda at: entries.at(slots[at].tolist()))
                chosen = [(float(scores[i]), entries[int(slots[i])], int(matched[i])) for i in best]
                break
        artifact = memory.artifact_id
        return [Candidate(artifact, entry_id, version_id, value, count)
                for value, (entry_id, version_id), count in chosen]

    def load(self, db: duckdb.DuckDBPyConnection, memory: MemoryRef, generation: str | None) -> None:
        """Bring the scope's view to ``memory.revision`` now (what its next search would do first)."""
        self._view_at(db, memory, generation)

    def _view_at(self, db: duckdb.DuckDBPyConnection, memory: MemoryRef, generation: str | None
                 ) -> _ScopePostings:
        """The scope's view, brought to ``memory.revision`` if it was behind (the caller checks the revision again
        under the lock). DuckDB is read without the lock — a cold scope's postings, the events since a view's
        revision — so a search or a write in progress on one thread never makes every other search wait for
        its statements; the lock is held only to look a view up and to change it in memory."""
        with self._lock:
            state = self._scopes.get(memory.artifact_id)
            if state is not None and state.generation != generation:
                self._scopes.clear()  # the index was rebuilt (another analyzer, a repair): every view is stale
                state = None
            if state is not None and state.revision == memory.revision:
                return state
            since = state.revision if state is not None and state.revision < memory.revision else None
        if state is None or since is None:
            fresh = _load(db, memory, generation)  # this thread's own until it is published
            with self._lock:
                cached = self._scopes.get(memory.artifact_id)
                if cached is None or cached.generation != generation or cached.revision < fresh.revision:
                    self._scopes.put(memory.artifact_id, fresh, fresh.live)
            return fresh  # an older snapshot than the cached view is served from its own copy, not cached
        with self._catch_ups.lead_or_wait(memory.artifact_id) as leading:
            if not leading:
                return state  # another thread brought it up meanwhile (the caller looks again)
            moves = _read_moves(db, memory, since)
            with self._lock:
                if state.revision == since and self._scopes.get(memory.artifact_id) is state:
                    _apply_moves(state, moves, memory.revision)
                    if state.needs_compaction():
                        state.compact()
                    self._scopes.put(memory.artifact_id, state, state.live)
        return state


def _load(db: duckdb.DuckDBPyConnection, memory: MemoryRef, generation: str | None) -> _ScopePostings:
    """The scope's view, read in ``memory``'s snapshot. Its documents come from DuckDB as numpy columns, not as a
    row tuple per document: ``fetchall`` built them in one C call holding the GIL, which an app's UI thread or
    asyncio loop waited for."""
    state = _ScopePostings(revision=memory.revision, generation=generation)
    scope_docs = (f"SELECT d.docid FROM head_entries h JOIN {SCHEMA}.docs d ON d.name = h.entry_version_id "
                  "WHERE h.artifact_id = $artifact AND h.state = 'active'")
    found = db.execute(
        f"""SELECT d.docid, d.len, h.entry_id, h.entry_version_id
            FROM head_entries h JOIN {SCHEMA}.docs d ON d.name = h.entry_version_id
            WHERE h.artifact_id = $artifact AND h.state = 'active' ORDER BY d.docid""",
        {"artifact": memory.artifact_id},
    ).fetchnumpy()
    documents = _Documents(found["docid"], found["len"].tolist(), found["entry_id"].tolist(),
                           found["entry_version_id"].tolist())
    postings = _read_postings(db, documents, f"({scope_docs})", {"artifact": memory.artifact_id})
    state.build(*_append(state, documents, postings))
    return state


@dataclass
class _Documents:
    """Documents of a scope's view, in docid order, as columns."""

    docids: np.ndarray
    lengths: list[int]
    entry_ids: list[str]
    version_ids: list[str]

    @classmethod
    def of(cls, rows: list[tuple[int, int, str, str]]) -> _Documents:
        """From ``(docid, len, entry_id, entry_version_id)`` rows in docid order."""
        import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

        return cls(np.asarray([row[0] for row in rows], dtype=np.int64), [row[1] for row in rows],
                   [row[2] for row in rows], [row[3] for row in rows])


@dataclass
class _Moves:
    """What moved a scope's head since a view's revision, read from the store: the entries that moved, and the
    documents (with their postings) of those that are active now."""

    rows: list[tuple[str, str, str]]
    documents: _Documents
    postings: dict[str, np.ndarray]


def _read_moves(db: duckdb.DuckDBPyConnection, memory: MemoryRef, since: int) -> _Moves:
    rows = head_moves(db, memory, since)
    active = {version_id: entry_id for entry_id, version_id, entry_state in rows if entry_state == "active"}
    found: list[tuple[int, int, str, str]] = []
    if active:
        found = [(docid, length, active[name], name) for docid, length, name in db.execute(
            f"SELECT docid, len, name FROM {SCHEMA}.docs WHERE name IN {connection.in_list(active)} ORDER BY docid"
        ).fetchall()]
    documents = _Documents.of(found)
    wanted = "(" + ", ".join(str(int(docid)) for docid in documents.docids.tolist()) + ")"
    return _Moves(rows, documents, _read_postings(db, documents, wanted, {}))


def _apply_moves(state: _ScopePostings, moves: _Moves, revision: int) -> None:
    for entry_id, _version_id, _state in moves.rows:
        state.remove(entry_id)
    if moves.documents.entry_ids:
        state.add_postings(*_append(state, moves.documents, moves.postings))
    state.revision = revision


def _read_postings(db: duckdb.DuckDBPyConnection, documents: _Documents, wanted: str,
                   parameters: dict) -> dict[str, np.ndarray]:
    """The postings ``(docid, termid, tf)`` of ``documents`` from the index's ``terms`` table; ``wanted`` is SQL for
    their docids (a literal list for a few, a subquery for a whole scope)."""
    import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

    if not documents.entry_ids:
        return {"docid": np.empty(0, np.int64), "termid": np.empty(0, np.int64), "tf": np.empty(0, np.int64)}
    # The BETWEEN lets DuckDB skip row groups by their docid range (new documents sit at the end of the table).
    return db.execute(
        f"""SELECT docid, termid, count(*)::BIGINT AS tf FROM {SCHEMA}.terms
            WHERE docid BETWEEN $low AND $high AND docid IN {wanted} GROUP BY ALL""",
        {"low": int(documents.docids[0]), "high": int(documents.docids[-1]), **parameters},
    ).fetchnumpy()


def _append(state: _ScopePostings, documents: _Documents, postings: dict[str, np.ndarray],
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Append the documents to ``state``'s slots; their postings as (termids, slots, tfs) arrays."""
    import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

    first = len(state.entries)
    state.extend(documents.entry_ids, documents.version_ids, documents.lengths)
    docids = np.asarray(documents.docids, dtype=np.int64)
    slots = first + np.searchsorted(docids, np.asarray(postings["docid"], dtype=np.int64))
    return (np.asarray(postings["termid"], dtype=np.int64), slots.astype(np.int64),
            np.asarray(postings["tf"], dtype=np.int64))
