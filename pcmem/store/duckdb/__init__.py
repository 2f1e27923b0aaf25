"""The DuckDB single-file backend.

``DuckDBBackend`` is imported on first use: the file checks in :mod:`pcmem.store.duckdb.files` (who holds a store,
what its identity is) serve processes that never open DuckDB themselves — a client of another process's store
imports neither DuckDB nor numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pcmem.store.duckdb.backend import DuckDBBackend

__all__ = ["DuckDBBackend"]


def __getattr__(name: str) -> Any:
    if name == "DuckDBBackend":
        from pcmem.store.duckdb.backend import DuckDBBackend

        return DuckDBBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
