"""The full-text channel: DuckDB's FTS extension index, maintained incrementally.

Freshness design: ``PRAGMA create_fts_index`` builds a static index (its own tables ``docs``, ``terms``, ``dict`` and
``stats`` in schema ``fts_main_fts_docs``), and the extension's ``match_bm25`` macro scores queries by reading those
tables at query time. So instead of rebuilding the index after writes (O(index), seconds for a large store), every write
transaction updates exactly those tables for the documents it adds or removes — new rows in docs/terms, df counts in
dict, and the stats row — in the same transaction as the revision: the next search sees the write, a superseded or
retired version disappears at once, and a write costs O(its own terms), not O(index).

The index holds one document per *active head* entry version of every scope (docname = entry_version_id). Text is
pre-analysed by :mod:`pcmem.analysis` (the store's analyzer, recorded in pcmem_meta) and stored as space-separated
terms; the index is configured to split on whitespace only (no stemming, stopwords, accent stripping or lowering),
so queries analysed the same way match the same terms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb

from pcmem.analysis import ANALYZERS, Analyzer
from pcmem.store.duckdb import connection, rows
from pcmem.store.duckdb.arrow import registered

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


#: Up to this many documents a write finds and updates index rows through the lookup indexes (O(change)); a larger
#: batch (an import) joins its rows against the store-wide tables once, which is cheaper per document.
POINT_WRITES = 64


@dataclass
class IdFloor:
    """Lower bounds of the next free document id and term id, kept by a backend from one write to the next.

    Why: the next id is one more than the largest in use, and ``max(docid)`` over the store-wide table is a scan that
    grows with the store. With a floor, DuckDB reads only the row groups whose id range reaches it (ids grow as rows are
    appended, so that is the table's tail) and skips the rest by their zone maps. Read, it is only ever a lower bound:
    the next id is the largest id at or above the floor plus one, so a floor that fell behind (another backend of the
    file wrote, a rebuild renumbered the index, a write rolled back) costs a gap in the ids at most, never a duplicate.
    A new floor (0) reads the whole table once.

    Exact, it is not read at all (one statement less per write): after a point write took its ids, the floor holds the
    next free ones for as long as nobody else can have taken any — see :meth:`begin_write`. Exact and too high is
    harmless (a gap: a write rolled back, an erasure or a rebuild lowered the largest id); too low never happens,
    because every way ids are taken outside this floor breaks the chain of writes it is exact for."""

    docid: int = 0
    termid: int = 0
    #: The next free ids are exactly ``docid`` and ``termid``: no read needed.
    exact: bool = False
    #: The write (a count of the file's write transactions in this process, WriteClock.begun) in which the floor was
    #: last known exact; None when it is not.
    known_in: int | None = None
    #: The write under way.
    write: int = 0

    def begin_write(self, write: int) -> None:
        """Write number ``write`` of the file in this process begins. The floor stays exact only when the last write
        of the file in this process was the one it was exact in (no other process writes a file this one holds): any
        other write in between — another backend of the same file, a repair, a change outside a write transaction —
        moves the count past it, and the ids are read again."""
        self.exact = self.known_in is not None and self.known_in == write - 1
        self.known_in = write if self.exact else None
        self.write = write

    def took(self, docid: int, termid: int) -> None:
        """A point write took every id below ``docid`` and ``termid``, knowing the largest in use: exact now."""
        self.docid, self.termid = docid, termid
        self.exact, self.known_in = True, self.write

    def lost(self) -> None:
        """Ids were taken without this floor (an import numbers its own): read them again next time."""
        self.exact, self.known_in = False, None


def add_documents(db: duckdb.DuckDBPyConnection, documents: Sequence[tuple[str, str]], analyzer: Analyzer,
                  floor: IdFloor | None = None) -> None:
    """Index ``(entry_version_id, text)`` pairs, analysed with the store's analyzer; ``floor`` is moved past the ids
    this write takes."""
    if not documents:
        return
    if len(documents) <= POINT_WRITES:
        rows.run_together(db, point_additions(db, documents, analyzer, floor or IdFloor()))
        return
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search or a point write never needs it
    if floor is not None:
        floor.lost()
    analysed = [(version_id, analyzer.analyze(text)) for version_id, text in documents]
    first = db.execute(f"SELECT coalesce(max(docid), -1) + 1 FROM {SCHEMA}.docs").fetchone()[0]
    with registered(db, "pcmem_new_docs", pa.table({
        "docid": pa.array(range(first, first + len(analysed)), pa.int64()),
        "name": pa.array([version_id for version_id, _ in analysed], pa.string()),
        "len": pa.array([len(terms) for _, terms in analysed], pa.int64())})):
        db.execute(f"INSERT INTO {SCHEMA}.docs SELECT docid, name, len FROM pcmem_new_docs")
    _add_terms_by_joins(db, analysed, first)
    _shift_stats(db, len(analysed), sum(len(terms) for _, terms in analysed))


def lookup_sql(terms: Iterable[str], floor: IdFloor) -> str:
    """One statement for a point write: ``(0, term, termid)`` for each of ``terms`` the index knows (an index scan of
    ``dict`` by term), then ``(1, NULL, next document id)`` and ``(2, NULL, next term id)``, each found at or above
    ``floor`` (see :class:`IdFloor`) — or the floor's own ids when it is exact, without a read."""
    docid, termid = int(floor.docid), int(floor.termid)
    known = f"SELECT 0, term, termid FROM {SCHEMA}.dict WHERE term IN {connection.in_list(terms)}"
    if floor.exact:
        return f"{known} UNION ALL SELECT 1, NULL, {docid} UNION ALL SELECT 2, NULL, {termid}"
    return (f"{known} "
            f"UNION ALL SELECT 1, NULL, (SELECT coalesce(max(docid) + 1, {docid}) FROM {SCHEMA}.docs "
            f"WHERE docid >= {docid}) "
            f"UNION ALL SELECT 2, NULL, (SELECT coalesce(max(termid) + 1, {termid}) FROM {SCHEMA}.dict "
            f"WHERE termid >= {termid})")


def point_additions(db: duckdb.DuckDBPyConnection, documents: Sequence[tuple[str, str]], analyzer: Analyzer,
                    floor: IdFloor, before: Sequence[str] = ()) -> list[str]:
    """What indexing a few ``(entry_version_id, text)`` pairs writes, as statements for the caller to run (with the
    rest of its write, :func:`rows.run_together`): known terms are found through the ``dict`` term index — the one
    read, run here, in the same call as the caller's statements ``before`` it — new term ids come after the largest,
    every row is a literal (see :mod:`.rows`). ``floor`` is moved past the ids the statements take."""
    analysed = [(version_id, analyzer.analyze(text)) for version_id, text in documents]
    doc_frequency: dict[str, int] = {}
    for _, terms in analysed:
        for term in set(terms):
            doc_frequency[term] = doc_frequency.get(term, 0) + 1
    # Looked up, then updated: an ``UPDATE … RETURNING`` here (one statement less) left DuckDB 1.5.5 planning later
    # term lookups of ``dict`` as table scans once the same rows had been updated by term id in that transaction
    # (a revise); tests/store/test_query_plans.py pins the index scan.
    found = db.execute(";\n".join([*before, lookup_sql(doc_frequency, floor)])).fetchall()
    termids = {term: int(termid) for kind, term, termid in found if kind == 0}
    first, next_termid = (next(int(value) for kind, _, value in found if kind == wanted) for wanted in (1, 2))
    statements = []
    if termids:
        # one document (a remember of one entry) adds 1 to every term: a constant, cheaper than a CASE
        increments = {doc_frequency[t] for t in termids}
        added = (str(next(iter(increments))) if len(increments) == 1 else
                 "CASE term " + " ".join(f"WHEN {connection.literal(t)} THEN {doc_frequency[t]}" for t in termids) + " END")
        statements.append(f"UPDATE {SCHEMA}.dict SET df = df + {added} WHERE term IN {connection.in_list(termids)}")
    fresh = sorted(term for term in doc_frequency if term not in termids)
    if fresh:  # new ids in term order after the largest, as a rebuild by the join path would number them
        termids.update({term: next_termid + n for n, term in enumerate(fresh)})
        statements.append(f"INSERT INTO {SCHEMA}.dict VALUES "
                          + rows.values((termids[term], term, doc_frequency[term]) for term in fresh))
    statements.append(f"INSERT INTO {SCHEMA}.docs VALUES " + rows.values(
        (first + i, version_id, len(terms)) for i, (version_id, terms) in enumerate(analysed)))
    postings = [(first + i, 0, termids[term]) for i, (_, terms) in enumerate(analysed) for term in terms]
    if postings:
        statements.append(f"INSERT INTO {SCHEMA}.terms VALUES " + rows.values(postings))
    statements.append(_stats_sql(len(analysed), sum(len(terms) for _, terms in analysed)))
    floor.took(first + len(analysed), next_termid + len(fresh))
    return statements


def _add_terms_by_joins(db: duckdb.DuckDBPyConnection, analysed: list[tuple[str, list[str]]], first: int) -> None:
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it

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
        # every filter below is one IN list on an indexed column: index scans, whatever the store's size
        gone = db.execute(f"DELETE FROM {SCHEMA}.docs WHERE name IN {connection.in_list(entry_version_ids)} "
                          "RETURNING docid, len").fetchall()
        if not gone:
            return
        docids = "(" + ", ".join(str(int(docid)) for docid, _ in gone) + ")"
        postings = db.execute(f"DELETE FROM {SCHEMA}.terms WHERE docid IN {docids} RETURNING docid, termid").fetchall()
        counts = Counter(int(termid) for _, termid in set(postings))  # documents per term
        if counts:
            cases = " ".join(f"WHEN {termid} THEN {n}" for termid, n in counts.items())
            termids = "(" + ", ".join(str(termid) for termid in counts) + ")"
            db.execute(f"UPDATE {SCHEMA}.dict SET df = df - CASE termid {cases} END WHERE termid IN {termids}")
        _shift_stats(db, -len(gone), -sum(int(length) for _, length in gone))
        return
    _remove_by_joins(db, entry_version_ids)


def _remove_by_joins(db: duckdb.DuckDBPyConnection, entry_version_ids: Sequence[str]) -> None:
    import pyarrow as pa  # lazy: pyarrow is slow to import, and a search never needs it

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
    recount would scan every document of every scope (``pcmem check`` verifies them against a recount). The counts
    are integer literals: bound parameters cost more (see :mod:`.rows`)."""
    if documents != 0:
        db.execute(_stats_sql(documents, length))


def _stats_sql(documents: int, length: int) -> str:
    n, length = int(documents), int(length)
    return (f"UPDATE {SCHEMA}.stats SET "
            f"avgdl = CASE WHEN num_docs + {n} = 0 THEN NULL "
            f"ELSE (coalesce(avgdl, 0) * num_docs + {length}) / (num_docs + {n}) END, "
            f"num_docs = num_docs + {n}")
