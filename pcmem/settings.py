"""Where the store lives. Precedence: an explicit argument (``--db``) > ``PCMEM_DB`` > the per-user default."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DB_ENV = "PCMEM_DB"
CACHE_ENV = "PCMEM_CACHE_DIR"
DEFAULT_DB_NAME = "memory.duckdb"
SEEKDB_SCHEME = "seekdb:"  # a connection string, not a path: see pcmem.store.open


def default_db_path() -> Path:
    """The per-user store file, e.g. ``~/.local/share/pcmem/memory.duckdb`` on Linux."""
    return Path(platformdirs.user_data_dir("pcmem", appauthor=False)) / DEFAULT_DB_NAME


def resolve_db_path(explicit: str | os.PathLike[str] | None = None) -> Path | str:
    """A store file path, or a ``seekdb:`` connection string kept as it is (see :mod:`pcmem.store.open`)."""
    chosen = explicit or os.environ.get(DB_ENV)
    if chosen:
        return str(chosen) if str(chosen).startswith(SEEKDB_SCHEME) else Path(chosen).expanduser()
    return default_db_path()


def cache_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where prepared model files live: an explicit path > ``PCMEM_CACHE_DIR`` > the per-user cache directory."""
    root = explicit or os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir("pcmem", appauthor=False)
    return Path(root).expanduser()
