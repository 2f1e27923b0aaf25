"""Opening a DuckDB store file, offline: error translation and the bundled full-text-search extension."""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import random
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import duckdb

from pcmem.errors import (
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StorePermissionError,
    StoreReadOnlyError,
)
from pcmem.store.duckdb import files, lock_probe, wal
from pcmem.store.duckdb.fts_extension import fts_extension_path

#: DuckDB worker threads per store instance. DuckDB defaults to one per core, so even a small search fans out and costs
#: more CPU than on one thread, for no gain at pcmem's scope sizes (docs/benchmarks/speed.md). Parallelism comes from
#: the application instead: each thread's cursor runs its own query on the calling thread, so concurrent searches still
#: use every core.
DUCKDB_THREADS: int | None = 1

#: The DuckDB storage format of a store pcmem creates. From the v1.4 format on, DuckDB writes the file's identifier and
#: checkpoint iteration into every write-ahead log and refuses to replay a log made for another file or another
#: checkpoint; in the v1.0 format (DuckDB's default) a log says nothing about its file, and another database's log
#: next to a store was replayed into it. An existing file keeps its format (see wal.prepare_leftover_wal).
NEW_STORE_STORAGE = "v1.5.0"

#: Compression methods a store never uses: ALP and ALP-RD (floats: the vectors, and the index's one ``avgdl``) and the
#: string encodings (dictionary + FSST, and the two alone, which files in DuckDB's older format use). Why: DuckDB 1.5.5
#: logs each commit's new rows by scanning back the whole 2,048-row vector they were appended to
#: (DataTable::WriteToLog, ScanTableSegment), and a table with an index appends into its last checkpointed row group,
#: so every write decoded again up to 2,047 stored rows of each table it appends to: the vectors, and the strings of
#: the entries, events and postings. Compressed strings are what made a remember cost more as a store grew (DuckDB
#: picks dictionary + FSST for them once a table is large enough); uncompressed, the same scan is a copy. What it costs
#: in file size (the vectors, which do not compress, are most of a store) is in docs/benchmarks/speed.md.
DISABLED_COMPRESSION = "alp,alprd,dict_fsst,fsst,dictionary"


def in_list(values: Iterable[str]) -> str:
    """``('a', 'b', …)``: a list of identifiers or analysed terms as SQL string literals, for ``column IN …``.

    Why literals: DuckDB answers ``IN`` over constants with an index scan of the column's ART index, where a list
    parameter or a subquery becomes a join that scans the whole column (an order of magnitude slower) — and binding a
    Python list costs its client two failed ``import pandas`` per element. Quotes are doubled, so any string is a
    well-formed literal; ids and terms never contain NUL, which is refused.
    """
    return "(" + (", ".join(literal(value) for value in values) or "NULL") + ")"


def literal(value: str) -> str:
    """A string as a SQL literal (see :func:`in_list`)."""
    if "\x00" in value:
        raise ValueError("NUL in an identifier or term")
    return "'" + value.replace("'", "''") + "'"


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


def connect(path: Path, *, lock_timeout: float = 0.0, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (or create) the DuckDB file at ``path``, translating driver errors (see :func:`load_fts`).

    The cause of a failure is decided by looking at the file, not at the words of DuckDB's message: another process
    holding the lock (retried with backoff for up to ``lock_timeout`` seconds, then StoreLockedError naming it),
    permission denied, or a damaged file. A DuckDB release pcmem does not run on, or one whose FTS extension is
    missing or built for another release, is StoreError naming what to install (:mod:`.fts_extension`). A leftover
    write-ahead log that is not this store's or has a damaged header is refused before DuckDB sees it (StoreWALError);
    one that ends inside a transaction that never committed is cut
    back to its complete transactions, the whole log kept in a copy (see :func:`wal.prepare_leftover_wal`).
    """
    _stop_repeated_pandas_lookups()
    fts_extension_path()  # a DuckDB without its matching FTS extension is refused here, saying what to install
    deadline = time.monotonic() + lock_timeout
    delay = 0.005
    unexplained = 0
    while True:
        holder = lock_probe.lock_holder(path)
        if holder is None:
            leftover_log = wal.prepare_leftover_wal(path, read_only=read_only)  # only when nobody is writing it
            replays = not read_only and leftover_log
            try:
                connection = duckdb.connect(str(path), read_only=read_only, config=_config())
                # a global setting (the instance's, every connection's); DuckDB's config dict ignores this one
                connection.execute(f"SET GLOBAL disabled_compression_methods = '{DISABLED_COMPRESSION}'")
                if replays:
                    checkpoint_replayed(connection, path)
                break
            except duckdb.Error as error:
                holder = lock_probe.lock_holder(path)
                if holder is None and not lock_probe.can_ask() and isinstance(error, duckdb.IOException):
                    holder = 0  # no way to ask the system who holds it: an I/O error on open is taken as "held"
                if holder is None:
                    unexplained += 1
                    if unexplained > 3:  # not a lock that came and went between our look and DuckDB's: the file
                        raise _open_error(path, error) from error
                    time.sleep(delay)  # look again at once, whatever lock_timeout says: this was no lock
                    continue
        if time.monotonic() + delay > deadline:
            raise StoreLockedError(f"{path} is in use by {lock_probe.describe_process(holder)} (waited {lock_timeout:g} s); "
                                   "close it there, or open the store with pcmem.open (it then serves this one)")
        time.sleep(delay + random.random() * delay)  # jitter: two waiting processes should not collide again
        delay = min(delay * 2, 0.02)  # poll often: a process that opened the store briefly may let it go soon
    return quiet(connection)


def _config() -> dict[str, str | bool | int | float | list[str]]:
    config: dict[str, str | bool | int | float | list[str]] = {"autoinstall_known_extensions": False}
    if DUCKDB_THREADS is not None:
        config["threads"] = DUCKDB_THREADS
    # Always, not only for a new file: an existing file keeps its own format whatever this says, and one
    # configuration for every connection lets a second connection in this process join the first (DuckDB refuses
    # "a different configuration than existing connections")
    config["storage_compatibility_version"] = NEW_STORE_STORAGE
    return config


def create_database(path: Path) -> None:
    """Create an empty DuckDB database file at ``path`` (in :data:`NEW_STORE_STORAGE`'s format) and close it.

    DuckDB creates the file with the umask's mode and refuses to adopt an empty file made beforehand ("exists, but
    it is not a valid DuckDB database file"), so a store is born this way in a private folder and linked into place
    (:func:`files.create_store_file`); pcmem's tables are added by the normal open that follows."""
    try:
        duckdb.connect(str(path), config=_config()).close()
    except duckdb.Error as error:
        raise StoreError(f"cannot create a DuckDB database ({str(error).splitlines()[0] if str(error) else error})"
                         ) from error


def checkpoint_replayed(connection: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Write a just-replayed write-ahead log into the file from this client, before anything else can close it.

    DuckDB 1.5.5 replays a log with the ``CREATE INDEX`` indexes unbound, their replayed rows buffered; the
    checkpoint it runs when the last connection closes has no client context and writes those indexes without the
    buffered rows (see :mod:`pcmem.store.duckdb.indexes`). A ``CHECKPOINT`` statement binds every index first, so
    the rows reach the file and the log is gone before any other code path could close the database."""
    try:
        connection.execute("CHECKPOINT")
    except duckdb.Error as error:
        connection.close()
        raise StoreError(f"{path}: replaying the write-ahead log left by a process that did not close the store "
                         f"failed ({str(error).splitlines()[0] if str(error) else type(error).__name__})") from error


def load_fts(db: duckdb.DuckDBPyConnection) -> None:
    """Load the FTS extension into ``db``'s database (idempotent). Only building the index needs it
    (``PRAGMA create_fts_index``: a new store, ``pcmem check --repair``) and the extension's own ``match_bm25``
    macro: pcmem reads and maintains the index tables with plain SQL, so opening a store does not load it (a cold
    CLI call need not pay for loading it)."""
    try:
        db.execute(f"LOAD '{fts_extension_path()}'")
    except duckdb.Error as error:
        raise StoreError(f"cannot load the DuckDB FTS extension: {error}") from error


def qualified_tables(db: duckdb.DuckDBPyConnection) -> set[str]:
    """Every table of the open database as ``schema.table``."""
    rows = db.execute("SELECT schema_name || '.' || table_name FROM duckdb_tables() "
                      "WHERE database_name = current_database()").fetchall()
    return {name for (name,) in rows}


def quiet(connection: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Turn off DuckDB's progress bar on this connection (a session setting: every cursor needs it too).

    DuckDB prints a progress bar to the process's stdout for any statement that runs past 2 s — a checkpoint on a busy
    machine is enough. A library must never write to its host's stdout: it broke `--json` output and the line
    protocol of the crash harness's writer process."""
    connection.execute("SET enable_progress_bar = false")
    return connection


def _open_error(path: Path, error: duckdb.Error) -> StoreError:
    first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
    refused_log = wal.replay_refused(path, first_line)
    if refused_log is not None:
        return refused_log
    if not os.access(path.parent, os.X_OK) or (path.exists() and not os.access(path, os.R_OK)):
        return StorePermissionError(f"permission denied opening {path}")
    if isinstance(error, duckdb.PermissionException) or not files.writable(path if path.exists() else path.parent):
        return StoreReadOnlyError(f"{path} cannot be opened for writing: the file, its folder or the file system is "
                                  f"read-only ({first_line})")
    return StoreFormatError(f"{path} is not a DuckDB database file, or it is damaged ({first_line})")
