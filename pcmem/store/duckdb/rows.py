"""The few rows one point write inserts, as SQL ``VALUES`` literals.

Why literals: a remember of one entry inserts one row into each of several tables. Through a registered Arrow table
each insert costs most (``register``/``unregister`` change the connection's catalog), a bound parameter less
(DuckDB's Python client looks for pandas per parameter), a statement of literals least. A large batch (an import)
still goes through Arrow, which is cheapest per row once registered (see :mod:`.arrow`).

Every value is rendered here, exactly: strings with their quotes doubled (:func:`connection.literal`, which refuses
NUL), integers and booleans as themselves, datetimes as naive ``TIMESTAMP`` literals to the microsecond, vectors as
their float32 values to 9 significant digits cast to ``FLOAT[n]`` (parsed back to the same bits).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from pcmem.store.duckdb.connection import literal

if TYPE_CHECKING:
    import duckdb
    import numpy as np

#: A float32 (as a Python float) in the 9 significant digits that name it exactly (see :func:`vector_value`).
_NINE_DIGITS = "{:.9g}".format

#: What a row of a point write holds.
Value = str | int | bool | datetime | None


def sql_value(value: Value) -> str:
    """One value as a SQL literal (a timezone-aware datetime is refused: the store keeps naive UTC)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            raise ValueError("timestamps reach the store as naive UTC")
        return f"TIMESTAMP '{value.isoformat(sep=' ', timespec='microseconds')}'"
    if isinstance(value, str):
        return literal(value)
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def values(rows: Iterable[Sequence[Value]]) -> str:
    """``(a, b), (c, d)``: the rows as the body of a ``VALUES`` list."""
    return ", ".join("(" + ", ".join(sql_value(value) for value in row) + ")" for row in rows)


def run_together(db: duckdb.DuckDBPyConnection, statements: Sequence[str]) -> None:
    """Statements whose results nobody reads, in order, as one call into DuckDB: each call has a fixed cost in its
    client over the statement itself, a noticeable share of a remember run one statement at a time. An error stops the
    rest, and the write transaction they belong to rolls back as with any failed statement."""
    if statements:
        db.execute(";\n".join(statements))


def vector_value(vector: np.ndarray) -> str:
    """A vector as a ``FLOAT[n]`` literal. Each float32 is written with 9 significant digits, which always name it
    exactly (a float32 has at most 9 round-trip digits); DuckDB reads them back as the same bits, whether it parses to
    float32 directly or through float64 (the decimal lies far closer to the float32 than half its spacing), and
    ``nan``/``inf``/``-0`` as it spells them. Why not ``repr``: the shortest float64 form takes about twice as long
    as ``.9g``."""
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy

    floats = np.asarray(vector, dtype=np.float32)
    if floats.ndim != 1:
        raise ValueError("a stored vector is one row")
    return f"'[{', '.join(map(_NINE_DIGITS, floats.tolist()))}]'::FLOAT[{floats.shape[0]}]"
