"""Where a ``remember`` goes (``python -m pcmem_bench.writes ratio --breakdown``): Python before, between and after
DuckDB's statements, each statement, and the COMMIT (its log write and fsync).

Every statement is timed on its own: statements pcmem sends together in one call (store/duckdb/rows.py
run_together) are split and sent one by one here, which adds DuckDB's client ~0.1 ms per extra call — so the parts
add up to a little more than an unmeasured remember, and the ``ratio`` figures come from runs without this.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from pcmem.store.duckdb import connection

_TABLE = re.compile(r"^\s*(INSERT INTO|UPDATE|DELETE FROM)\s+([\w.]+)|^\s*SELECT\b.*?\bFROM\s+([\w.]+)", re.S)


def part_name(statement: str) -> str:
    """``INSERT INTO embeddings``, ``SELECT FROM fts_main_fts_docs.dict``, ``COMMIT``: what a statement is a part of."""
    found = _TABLE.match(statement)
    if found is None:
        return statement.split()[0].upper() if statement.split() else "(empty)"
    verb, table, read = found.groups()
    return f"{verb} {table}" if verb else f"SELECT FROM {read}"


class _Timed:
    """A DuckDB connection or cursor that times each statement, one call per statement."""

    def __init__(self, inner: Any, parts: list[tuple[str, float]]) -> None:
        self._inner, self._parts = inner, parts

    def execute(self, statements: str, *args: Any) -> _Timed:
        for statement in str(statements).split(";\n"):
            started = time.perf_counter()
            self._inner.execute(statement, *args)
            self._parts.append((part_name(statement), (time.perf_counter() - started) * 1000))
        return self

    def cursor(self) -> _Timed:
        return _Timed(self._inner.cursor(), self._parts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextmanager
def timing_statements() -> Iterator[list[tuple[str, float]]]:
    """Stores opened inside this block time their statements into the list it yields (part, ms), in order."""
    parts: list[tuple[str, float]] = []
    quiet = connection.quiet

    def timed(opened: Any) -> Any:
        return quiet(cast(Any, opened if isinstance(opened, _Timed) else _Timed(opened, parts)))

    setattr(connection, "quiet", timed)  # noqa: B010 (a benchmark's instrument, restored below)
    try:
        yield parts
    finally:
        setattr(connection, "quiet", quiet)  # noqa: B010


def breakdown(remember: Callable[[], object], parts: list[tuple[str, float]], samples: int) -> dict:
    """``samples`` remembers; the median of each part (ms) and of the Python around the statements."""
    by_part: dict[str, list[float]] = defaultdict(list)
    python: list[float] = []
    totals: list[float] = []
    for _ in range(samples):
        parts.clear()
        started = time.perf_counter()
        remember()
        total = (time.perf_counter() - started) * 1000
        totals.append(total)
        python.append(total - sum(ms for _, ms in parts))
        for name, ms in parts:
            by_part[name].append(ms)
    medians = {name: round(statistics.median(values), 3) for name, values in by_part.items()}
    return {"remember_ms_p50": round(statistics.median(totals), 2), "python_ms_p50": round(statistics.median(python), 2),
            "statements": sum(1 for name in medians if name not in {"BEGIN", "COMMIT"}), "parts_ms_p50": medians}
