"""The SQL statements a DuckDB store runs, logged from the connection up: for tests that count what a write reads."""

from __future__ import annotations

import duckdb
import pytest

from pcmem.store.duckdb import connection


def statements_starting(monkeypatch: pytest.MonkeyPatch, prefix: str) -> list[str]:
    """The statements beginning with ``prefix`` run on stores opened after this call (statements sent together in
    one call are counted one by one)."""
    log: list[str] = []

    class Logging:
        def __init__(self, inner: duckdb.DuckDBPyConnection) -> None:
            self._inner = inner

        def execute(self, statement, *args):  # noqa: ANN001, ANN002, ANN201
            log.extend(part for part in str(statement).split(";\n") if part.startswith(prefix))
            self._inner.execute(statement, *args)
            return self

        def cursor(self):  # noqa: ANN201
            return Logging(self._inner.cursor())

        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(self._inner, name)

    quiet = connection.quiet
    monkeypatch.setattr(connection, "quiet", lambda opened: quiet(opened if isinstance(opened, Logging)
                                                                 else Logging(opened)))
    return log
