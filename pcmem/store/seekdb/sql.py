"""SQL plumbing for seekdb: literal rendering and one connection type over embedded seekdb or a MySQL-protocol server.

The embedded driver (``pylibseekdb``) executes plain SQL strings only: it has no parameter binding. So every value
reaches the engine as a literal rendered here, with MySQL escaping (``pymysql.converters.escape_string``; the
session runs without ``NO_BACKSLASH_ESCAPES``). Nothing outside this module builds a literal from a value.
Transactions are SQL statements (``START TRANSACTION`` / ``COMMIT`` / ``ROLLBACK``) on autocommit connections, which
both drivers accept; driver errors become :class:`~pcmem.errors.StoreError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from pcmem.errors import DuplicateKeyError, StoreError

_QUERY = re.compile(r"^\s*(SELECT|SHOW|WITH|DESC|DESCRIBE|EXPLAIN)\b", re.IGNORECASE)
# Multi-row INSERTs are cut at about this many characters of SQL (a LoCoMo conversation is ~700 rows).
MAX_STATEMENT_CHARS = 1_000_000


def _escape(text: str) -> str:
    from pymysql.converters import escape_string

    return escape_string(text)


def quote(value: Any) -> str:
    """One SQL literal. Datetimes are stored as naive UTC with microseconds."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise StoreError(f"cannot store the non-finite number {value!r}")
        return repr(value)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return "'" + value.strftime("%Y-%m-%d %H:%M:%S.%f") + "'"
    if isinstance(value, str):
        return "'" + _escape(value) + "'"
    raise StoreError(f"cannot render {type(value).__name__} as SQL")


def vector_literal(vector: np.ndarray) -> str:
    """``'[x1,...,xn]'`` with 9 significant digits, which round-trips float32 exactly."""
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if not np.all(np.isfinite(values)):
        raise StoreError("cannot store a vector with non-finite components")
    return "'[" + ",".join(map("{:.9g}".format, values.tolist())) + "]'"


def parse_vector(text: str | bytes) -> np.ndarray:
    if isinstance(text, bytes):
        text = text.decode()
    return np.asarray([float(x) for x in text.strip("[] ").split(",")], dtype=np.float32)


def in_list(values: Iterable[Any]) -> str:
    """``(v1, v2, ...)`` for an ``IN`` predicate; callers never pass an empty list."""
    rendered = [quote(v) for v in values]
    if not rendered:
        raise StoreError("internal error: empty IN list")
    return "(" + ", ".join(rendered) + ")"


def render(sql: str, *params: Any) -> str:
    """Substitute ``%s`` placeholders with literals (the SQL text itself never contains ``%``)."""
    return sql % tuple(quote(p) for p in params)


def chunks(values: Sequence[Any], size: int = 1000) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class Connection(Protocol):
    def run(self, sql: str) -> list[tuple]:
        """Execute one statement; returns its rows (empty for statements without a result set)."""

    def close(self) -> None: ...


def insert_rows(db: Connection, head: str, rows: Sequence[str], tail: str = "") -> None:
    """``{head} VALUES row, row, ... {tail}`` in as few statements as fit MAX_STATEMENT_CHARS; rows are rendered
    ``(...)`` tuples."""
    batch: list[str] = []
    size = 0
    for row in rows:
        if batch and size + len(row) > MAX_STATEMENT_CHARS:
            db.run(f"{head} VALUES {', '.join(batch)} {tail}")
            batch, size = [], 0
        batch.append(row)
        size += len(row) + 2
    if batch:
        db.run(f"{head} VALUES {', '.join(batch)} {tail}")


def row(*values: Any) -> str:
    return "(" + ", ".join(quote(v) for v in values) + ")"


class EmbeddedConnection:
    """A connection to the process's embedded seekdb instance (``pylibseekdb``)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def run(self, sql: str) -> list[tuple]:
        import pylibseekdb

        cursor = self._raw.cursor()
        try:
            cursor.execute(sql)
            return list(cursor.fetchall()) if _QUERY.match(sql) else []
        except pylibseekdb.SeekdbError as error:
            raise engine_error(error) from error
        finally:
            cursor.close()

    def close(self) -> None:
        self._raw.close()


class ServerConnection:
    """A MySQL-protocol connection (``pymysql``) to a seekdb server or an OceanBase cluster."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def run(self, sql: str) -> list[tuple]:
        import pymysql

        try:
            with self._raw.cursor() as cursor:
                cursor.execute(sql)  # no args: pymysql does no %-interpolation
                return list(cursor.fetchall()) if _QUERY.match(sql) else []
        except pymysql.MySQLError as error:
            raise engine_error(error) from error

    def close(self) -> None:
        self._raw.close()


def engine_error(error: Exception) -> StoreError:
    message = str(error)
    code = getattr(error, "args", (None,))[0]
    if code == 1062 or "code=1062" in message or "Duplicate entry" in message:
        return DuplicateKeyError(f"seekdb: {message}")
    return StoreError(f"seekdb operation failed: {message}")
