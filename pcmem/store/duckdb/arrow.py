"""Bulk rows reach DuckDB as registered Arrow tables: binding Python lists costs per row what Arrow costs per batch."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    import pyarrow as pa


@contextmanager
def registered(cursor: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> Iterator[None]:
    """Expose ``table`` to SQL on this cursor under ``name`` for the duration of the block."""
    cursor.register(name, table)
    try:
        yield
    finally:
        cursor.unregister(name)
