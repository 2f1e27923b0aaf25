"""Opening a DuckDB store file, offline: error translation and the bundled full-text-search extension."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import duckdb

from pcmem.errors import StoreError, StoreFormatError


def fts_extension_path() -> Path:
    """Where the ``duckdb-extension-fts`` wheel put the extension binary for the installed DuckDB version.

    ``INSTALL fts`` would download from the network, which pcmem never does; the binary ships on PyPI pinned to
    one DuckDB version, so a mismatch is a configuration problem we report plainly.
    """
    spec = importlib.util.find_spec("duckdb_extension_fts")
    if spec is None or spec.origin is None:
        raise StoreError("the DuckDB full-text-search extension is missing: pip install duckdb-extension-fts")
    path = Path(spec.origin).parent / "extensions" / f"v{duckdb.__version__}" / "fts.duckdb_extension"
    if not path.is_file():
        raise StoreError(
            f"no FTS extension for DuckDB {duckdb.__version__} at {path}; "
            "install matching versions of duckdb and duckdb-extension-fts"
        )
    return path


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    """Open (or create) the DuckDB file at ``path`` with the FTS extension loaded, translating driver errors."""
    try:
        connection = duckdb.connect(str(path), config={"autoinstall_known_extensions": False})
    except duckdb.IOException as error:
        message = str(error)
        if "lock" in message.lower():
            raise StoreError(f"{path} is open in another process: {message}") from error
        raise StoreFormatError(f"{path} is not a DuckDB database file ({message})") from error
    except duckdb.Error as error:
        raise StoreFormatError(f"cannot open {path} as a DuckDB database: {error}") from error
    try:
        connection.execute(f"LOAD '{fts_extension_path()}'")
    except duckdb.Error as error:
        connection.close()
        raise StoreError(f"cannot load the DuckDB FTS extension: {error}") from error
    return connection
