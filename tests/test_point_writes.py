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
from pcmem.store.duckdb import connection, fts_index
from pcmem.testing import HashEmbedder

#: Statements of a remember of one new entry in an existing scope, BEGIN to COMMIT (about 25 before, in two transactions).
POINT_REMEMBER_STATEMENTS = 16


class _Counting:
    """A DuckDB connection or cursor that logs the statements and Arrow registrations run through it."""

    def __init__(self, inner: duckdb.DuckDBPyConnection, log: list[str]) -> None:
        self._inner, self._log = inner, log

    def execute(self, statement, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self._log.append(str(statement))
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
    log: list[str] = []
    quiet = connection.quiet
    monkeypatch.setattr(connection, "quiet", lambda opened: quiet(_Counting(opened, log))
                        if not isinstance(opened, _Counting) else opened)
    with pcmem.open_sync(db_path, embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(text=f"seed note {i}") for i in range(3))))
        log.clear()
        memory.remember("a fresh note about otters")
        statements = list(log)
        assert memory.search("otters").hits[0].text == "a fresh note about otters"
    assert not [s for s in statements if s.startswith("REGISTER")], statements
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN TRANSACTION"], "one transaction, no read first"
    assert len(statements) <= POINT_REMEMBER_STATEMENTS, "\n".join(s[:100] for s in statements)


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
    with pcmem.open_sync(db_path, embedder=embedder) as runtime:
        written = runtime.memory.for_scope("s").remember("Priya moved the standup to 9:30.")
        version_id = written.citations[0].entry_version_id
        stored = runtime.backend.stored_vectors(embedder.profile, [version_id])[version_id]
    expected = embedder.vector("Priya moved the standup to 9:30.")
    assert np.asarray(stored, np.float32).tobytes() == np.asarray(expected, np.float32).tobytes()


def test_a_point_write_does_not_import_pyarrow(db_path):
    """pyarrow costs ~100 ms to import: a CLI remember or revise should not pay it for one row per table."""
    program = f"""
import sys
import pcmem
from pcmem.testing import HashEmbedder
with pcmem.open_sync({str(db_path)!r}, embedder=HashEmbedder()) as runtime:
    memory = runtime.memory.for_scope("s")
    memory.remember("first note", entry_id="k")
    memory.remember("second note")
    memory.revise(pcmem.ReviseRequest(entry_id="k", text="first note, revised", expected_version=1))
print("pyarrow" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
