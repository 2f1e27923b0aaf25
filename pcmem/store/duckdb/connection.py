"""Opening a DuckDB store file, offline: error translation and the bundled full-text-search extension."""

from __future__ import annotations

import importlib.abc
import importlib.util
import random
import sys
import time
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


class _AbsentModuleFinder(importlib.abc.MetaPathFinder):
    """Answers "not installed" at once for modules known to be absent, instead of rescanning sys.path each time."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _stop_repeated_pandas_lookups() -> None:
    """DuckDB's Python client tries ``import pandas`` on every statement (~130 times per hybrid search). Without
    pandas installed each failed import rescans sys.path, which was ~60% of a search's time. Only done when pandas
    is not installed; a normal ModuleNotFoundError is raised, exactly as before, just faster."""
    if any(isinstance(finder, _AbsentModuleFinder) for finder in sys.meta_path):
        return
    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        sys.meta_path.insert(0, _AbsentModuleFinder(frozenset({"pandas"})))


def connect(path: Path, *, lock_timeout: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open (or create) the DuckDB file at ``path`` with the FTS extension loaded, translating driver errors.

    When another process holds the file, retry with backoff for up to ``lock_timeout`` seconds.
    """
    _stop_repeated_pandas_lookups()
    deadline = time.monotonic() + lock_timeout
    delay = 0.01
    while True:
        try:
            connection = duckdb.connect(str(path), config={"autoinstall_known_extensions": False})
            break
        except duckdb.IOException as error:
            message = str(error)
            if "lock" not in message.lower():
                raise StoreFormatError(f"{path} is not a DuckDB database file ({message})") from error
            if time.monotonic() + delay > deadline:
                raise StoreError(
                    f"{path} is open in another process (waited {lock_timeout:g} s): {message.splitlines()[0]}"
                ) from error
            time.sleep(delay + random.random() * delay)  # jitter: two waiting processes should not collide again
            delay = min(delay * 2, 0.2)
        except duckdb.Error as error:
            raise StoreFormatError(f"cannot open {path} as a DuckDB database: {error}") from error
    try:
        connection.execute(f"LOAD '{fts_extension_path()}'")
    except duckdb.Error as error:
        connection.close()
        raise StoreError(f"cannot load the DuckDB FTS extension: {error}") from error
    return connection
