"""The DuckDB plans that performance depends on: point lookups by a literal IN list use the ART index.

pcmem writes ``column IN ('a', 'b', …)`` with literals (connection.in_list) because DuckDB answers that with an index
scan, where a list parameter or a subquery becomes a join that scans the whole column. This test records the
statements a real search, remember and revise run, and asks DuckDB (EXPLAIN ANALYZE, inside a rolled-back
transaction) how it runs each lookup: a refactor that turns one of them back into a scan fails here, not only in a
benchmark.
"""

from __future__ import annotations

import re

import duckdb

import pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest, SearchMemoryRequest
from pcmem.store.duckdb import connection

LOOKUP = re.compile(r"\b(entry_id|term|name|entry_version_id)\s+IN\s+\('", re.IGNORECASE)


class _Recording:
    """A DuckDB connection or cursor that records the statements run through it."""

    def __init__(self, inner: duckdb.DuckDBPyConnection, log: list[str]) -> None:
        self._inner, self._log = inner, log

    def execute(self, statement, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self._log.extend(str(statement).split(";\n"))  # a write's statements may run together (rows.run_together)
        self._inner.execute(statement, *args, **kwargs)
        return self

    def cursor(self):  # noqa: ANN201
        return _Recording(self._inner.cursor(), self._log)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._inner, name)


def test_point_lookups_of_searches_and_writes_scan_the_index(tmp_path, monkeypatch, fake_embedder):
    db = tmp_path / "plans.duckdb"
    with pcmem.open(db, embedder=fake_embedder) as runtime:
        runtime.memory.for_scope("big").remember(RememberRequest(entries=tuple(
            NewEntry(entry_id=f"e{i}", text=f"note {i} on subject s{i} with word w{i % 500}") for i in range(5000))))
    statements: list[str] = []
    quiet = connection.quiet
    monkeypatch.setattr(connection, "quiet", lambda opened: quiet(_Recording(opened, statements))
                        if not isinstance(opened, _Recording) else opened)
    with pcmem.open(db, embedder=fake_embedder) as runtime:
        memory = runtime.memory.for_scope("big")
        memory.search(SearchMemoryRequest(query="subject s42 w17", mode="hybrid", limit=10))
        memory.remember(RememberRequest(entries=(NewEntry(entry_id="new", text="note about subject s42"),)))
        memory.revise(ReviseRequest(entry_id="e7", text="note 7 revised on subject s7", expected_version=1))
    lookups = sorted({statement for statement in statements if LOOKUP.search(statement)})
    assert len(lookups) >= 4, f"expected the search and the writes to look rows up by key, got {lookups}"
    monkeypatch.undo()
    with duckdb.connect(str(db)) as raw:
        scans = []
        for statement in lookups:
            raw.execute("BEGIN TRANSACTION")
            plan = raw.execute(f"EXPLAIN ANALYZE {statement}").fetchall()[0][1]
            raw.execute("ROLLBACK")
            if "Index Scan" not in plan:
                scans.append(" ".join(statement.split())[:160])
    assert scans == [], f"these lookups scan their table instead of the index: {scans}"
