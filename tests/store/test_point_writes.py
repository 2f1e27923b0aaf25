"""What one point write costs the store: the statements it runs, the rows it reads, the modules it loads.

A remember of one entry was ~20 statements and five registered Arrow tables (each registration ~1-2.5 ms), and found
the next full-text ids by scanning the store-wide index tables (7.7 ms at 1,000,000 documents): issue #30. These
tests pin the causes, not a timing: the statements and registrations are counted, the rows DuckDB scans are read
from its profile, and a fresh interpreter shows whether pyarrow was imported.
"""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import numpy as np
import pytest

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.analysis import ANALYZERS
from pcmem.store.duckdb import connection, fts_index, rows
from pcmem.testing import HashEmbedder

#: Statements of a remember of one new entry (with terms new to the index) in a scope this process wrote last, BEGIN
#: to COMMIT (about 25 in two transactions in session 6; 16 in session 7; 15 in session 8, with the opening read of
#: the scope's head and profiles that a held store now keeps from its last write: store/duckdb/generation_memo.py).
POINT_REMEMBER_STATEMENTS = 14
#: Calls into DuckDB that run them: BEGIN, the revision's rows with the index lookup, the index, vector and head rows,
#: COMMIT (a call costs DuckDB's client ~0.1 ms: store/duckdb/rows.py run_together).
POINT_REMEMBER_CALLS = 4


#: Appended to a logged statement that was run with bound parameters.
_BOUND = " -- with parameters"


def _logging_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement run on a store opened after this call, in order (see :class:`_Counting`)."""
    log: list[str] = []
    quiet = connection.quiet
    monkeypatch.setattr(connection, "quiet", lambda opened: quiet(_Counting(opened, log))
                        if not isinstance(opened, _Counting) else opened)
    return log


class _Counting:
    """A DuckDB connection or cursor that logs the statements and Arrow registrations run through it."""

    def __init__(self, inner: duckdb.DuckDBPyConnection, log: list[str]) -> None:
        self._inner, self._log = inner, log

    def execute(self, statement, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self._log.append(str(statement) + (_BOUND if args or kwargs else ""))
        self._inner.execute(statement, *args, **kwargs)
        return self

    def register(self, name, table):  # noqa: ANN001, ANN201
        self._log.append(f"REGISTER {name}")
        return self._inner.register(name, table)

    def cursor(self):  # noqa: ANN201
        return _Counting(self._inner.cursor(), self._log)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._inner, name)


def test_a_point_remember_runs_few_statements_and_registers_no_arrow_table(db_path, monkeypatch):
    embedder = HashEmbedder(dimension=16)
    log = _logging_statements(monkeypatch)
    with pcmem.open(db_path, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=f"seed note {i}") for i in range(3))))
        log.clear()
        memory.remember("a fresh note about otters")
        statements = list(log)
        assert memory.search("otters").hits[0].text == "a fresh note about otters"
    calls = len(statements)
    statements = [statement for call in statements for statement in call.split(";\n")]
    assert not [s for s in statements if s.startswith("REGISTER")], statements
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN TRANSACTION"], "one transaction, no read first"
    assert statements[0] == "BEGIN TRANSACTION", "no read before the transaction"
    assert len(statements) <= POINT_REMEMBER_STATEMENTS, "\n".join(s[:100] for s in statements)
    assert calls <= POINT_REMEMBER_CALLS, calls
    # a bound parameter costs DuckDB's client more than the same value as a literal (see store/duckdb/rows.py)
    assert not [s for s in statements if s.endswith(_BOUND)], "\n".join(s[:100] for s in statements)
    # one document adds 1 to each of its terms' document frequencies: a constant, not a CASE over the terms
    counted = [s for s in statements if "dict SET df" in s]
    assert counted and not [s for s in counted if "CASE" in s], counted


def test_an_id_pcmem_generates_is_never_looked_up(db_path, monkeypatch):
    """An entry without a caller's id gets a new one (pcmem.ids.new_id): nothing in the store can hold it yet, so a
    remember reads no head row for it. An id the caller names is still looked up (it may exist: upsert, revise)."""
    log = _logging_statements(monkeypatch)
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=16)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("seed note", entry_id="k")
        log.clear()
        memory.remember("a note without an id")
        generated = list(log)
        log.clear()
        memory.remember("the seed note, again", entry_id="k", upsert=True)
        named = list(log)
        assert sorted(item.entry.text for item in memory.list().entries) == ["a note without an id", "the seed note, again"]
    reads_heads = [s for s in generated if "FROM head_entries" in s]
    assert not reads_heads, reads_heads
    assert [s for s in named if "FROM head_entries" in s]


def _index_with(db: duckdb.DuckDBPyConnection, documents: int) -> None:
    """An empty full-text index, then ``documents`` synthetic documents and as many terms (several row groups)."""
    connection.load_fts(db)
    fts_index.create(db)
    db.execute(f"INSERT INTO {fts_index.SCHEMA}.docs SELECT range, 'd' || range, 1 FROM range({documents})")
    db.execute(f"INSERT INTO {fts_index.SCHEMA}.dict SELECT range, 't' || range, 1 FROM range({documents})")
    db.execute("CHECKPOINT")


def _rows_scanned(db: duckdb.DuckDBPyConnection, statement: str) -> int:
    plan = json.loads(db.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}").fetchall()[0][1])

    def total(node: dict) -> int:
        return int(node.get("operator_rows_scanned", 0)) + sum(total(child) for child in node.get("children", []))

    return sum(total(node) for node in (plan if isinstance(plan, list) else [plan]))


def test_the_next_fulltext_ids_are_read_from_the_tail_of_the_index(tmp_path):
    documents = 300_000
    with duckdb.connect(str(tmp_path / "index.duckdb")) as db:
        _index_with(db, documents)
        floor = fts_index.IdFloor()
        fts_index.add_documents(db, [("v1", "alpha beta")], ANALYZERS["v2"], floor)  # a new floor reads it all once
        assert (floor.docid, floor.termid) == (documents + 1, documents + 2)
        assert _rows_scanned(db, fts_index.lookup_sql(["alpha"], floor)) < documents // 4  # both tables, not 600,000
        fts_index.add_documents(db, [("v2", "alpha gamma")], ANALYZERS["v2"], floor)
        assert db.execute(f"SELECT name, docid FROM {fts_index.SCHEMA}.docs WHERE docid >= {documents} ORDER BY 2"
                          ).fetchall() == [("v1", documents), ("v2", documents + 1)]
        assert db.execute(f"SELECT term, termid, df FROM {fts_index.SCHEMA}.dict WHERE termid >= {documents} "
                          "ORDER BY 2").fetchall() == [("alpha", documents, 2), ("beta", documents + 1, 1),
                                                       ("gamma", documents + 2, 1)]


@pytest.mark.parametrize(("floor", "expected"), [(fts_index.IdFloor(5, 7), (10, 10)),  # behind: another writer
                                                 (fts_index.IdFloor(50, 60), (50, 60))])  # ahead: renumbered
def test_a_stale_id_floor_never_reuses_an_id(tmp_path, floor, expected):
    with duckdb.connect(str(tmp_path / "index.duckdb")) as db:
        _index_with(db, 10)
        fts_index.add_documents(db, [("new", "fresh words")], ANALYZERS["v2"], floor)
        assert db.execute(f"SELECT docid FROM {fts_index.SCHEMA}.docs WHERE name = 'new'").fetchone()[0] == expected[0]
        assert db.execute(f"SELECT min(termid) FROM {fts_index.SCHEMA}.dict WHERE term IN ('fresh', 'words')"
                          ).fetchone()[0] == expected[1]
        assert db.execute(f"SELECT count(DISTINCT docid) = count(*) FROM {fts_index.SCHEMA}.docs").fetchone()[0]


def test_a_vector_written_as_a_literal_reads_back_bit_for_bit(db_path):
    embedder = HashEmbedder(dimension=384, by="text")
    with pcmem.open(db_path, embedder=embedder) as runtime:
        written = runtime.memory.for_scope("s").remember("Priya moved the standup to 9:30.")
        version_id = written.citations[0].entry_version_id
        stored = runtime.backend.stored_vectors(embedder.profile, [version_id])[version_id]
    expected = embedder.vector("Priya moved the standup to 9:30.")
    assert np.asarray(stored, np.float32).tobytes() == np.asarray(expected, np.float32).tobytes()


def test_a_vector_literal_names_every_float32_exactly():
    """Random bit patterns (normal, subnormal, both zeros, the extremes) and the non-finite values read back as the
    same float32 bits from :func:`rows.vector_value`."""
    patterns = np.random.default_rng(3).integers(0, 2**32, 50_000, dtype=np.uint64).astype(np.uint32)
    finite = patterns.view(np.float32)[np.isfinite(patterns.view(np.float32))]
    limits = np.finfo(np.float32)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, limits.max, -limits.max, limits.tiny, limits.smallest_subnormal,
                      -limits.smallest_subnormal, np.float32(1) / 3], dtype=np.float32)
    with duckdb.connect() as db:
        for vector in (edges, *np.array_split(finite, 25)):
            read = np.asarray(db.execute(f"SELECT {rows.vector_value(vector)}").fetchone()[0], np.float32)
            assert read.view(np.uint32).tolist() == vector.view(np.uint32).tolist()
        nan = np.asarray(db.execute(f"SELECT {rows.vector_value(np.array([np.nan], np.float32))}").fetchone()[0])
        assert np.isnan(nan).all()


def test_a_point_write_does_not_import_pyarrow(db_path):
    """pyarrow costs ~100 ms to import: a CLI remember or revise should not pay it for one row per table."""
    program = f"""
import sys
import pcmem
from pcmem.testing import HashEmbedder
with pcmem.open({str(db_path)!r}, embedder=HashEmbedder()) as runtime:
    memory = runtime.memory.for_scope("s")
    memory.remember("first note", entry_id="k")
    memory.remember("second note")
    memory.revise(pcmem.ReviseRequest(entry_id="k", text="first note, revised", expected_version=1))
print("pyarrow" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_transaction_that_cannot_begin_is_a_store_error(db_path, monkeypatch):
    """BEGIN runs in one call with the write's first read, inside the transaction's error handling: a DuckDB that
    refuses it (a database invalidated by an earlier fatal error) surfaces as a StoreError, not a driver error."""
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=16)) as runtime:
        runtime.memory.for_scope("s").remember("a first note")

    invalidated = False

    class Refusing(_Counting):
        def execute(self, statement, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
            if invalidated and str(statement).startswith("BEGIN"):
                raise duckdb.FatalException("FATAL Error: database has been invalidated")
            return super().execute(statement, *args, **kwargs)

        def cursor(self):  # noqa: ANN201
            return Refusing(self._inner.cursor(), self._log)

    quiet = connection.quiet
    monkeypatch.setattr(connection, "quiet", lambda opened: quiet(Refusing(opened, []))
                        if not isinstance(opened, _Counting) else opened)
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=16)) as runtime:
        memory = runtime.memory.for_scope("s")
        assert memory.head() is not None
        invalidated = True
        with pytest.raises(pcmem.errors.StoreError, match="invalidated"):
            memory.remember("a second note")
        invalidated = False


def test_a_store_keeps_its_vectors_uncompressed(db_path):
    """DuckDB 1.5.5 logs a commit's new rows by scanning back the whole 2,048-row vector they joined, and the
    embeddings (a primary key) append into their last checkpointed row group: stored as ALP-RD, every remember decoded
    up to 2,047 vectors again (~0.6-1 ms). connection.DISABLED_COMPRESSION keeps floats plain (ALP-RD saved ~2 %)."""
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=64)) as runtime:
        runtime.memory.for_scope("s").remember(RememberRequest(
            entries=tuple(NewEntry(text=f"note {i} about otters and rivers") for i in range(300))))
    db = connection.connect(db_path, read_only=True)
    try:
        methods = {method for (method,) in db.execute(
            "SELECT DISTINCT compression FROM pragma_storage_info('embeddings') "
            "WHERE segment_type = 'FLOAT' AND persistent").fetchall()}
    finally:
        db.close()
    assert methods and not methods & {"ALP", "ALPRD"}, methods
