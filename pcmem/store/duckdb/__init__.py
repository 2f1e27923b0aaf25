"""The DuckDB single-file backend."""

from pcmem.store.duckdb.backend import DuckDBBackend

__all__ = ["DuckDBBackend"]
