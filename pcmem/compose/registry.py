"""One storage backend per store file per process, shared by every runtime that opens it.

DuckDB lets one process hold one database instance per file: two instances of one path in one process fail with
"Unique file handle conflict" (shared mode) or lose writes to "Conflict on update!" (two write locks that do not
know about each other). So :func:`acquire` hands every runtime of a path the same backend — its write lock, its
cursor pool and its caches — counting the users; the backend closes the file when the last one closes it.

The first runtime's options decide for the process: a later ``shared=True`` on a path this process already holds
exclusively uses the held instance (and the reverse uses the shared one).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar


class Shareable(Protocol):
    def share(self) -> bool:
        """Count one more user; False when the backend is already closed."""

    def when_closed(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the last user closed the backend."""


B = TypeVar("B", bound=Shareable)
_backends: dict[str, Shareable] = {}
_guard = threading.Lock()


def key_for(path: Path) -> str:
    """The identity of a store file: its absolute, symlink-resolved path (the file need not exist yet)."""
    return os.path.realpath(path.expanduser())


def acquire(path: Path, open_backend: Callable[[], B]) -> B:
    """The process's backend for ``path`` (one more user of it), opened with ``open_backend`` if nobody holds it."""
    key = key_for(path)
    with _guard:
        backend = _backends.get(key)
        if backend is not None and backend.share():
            return backend  # type: ignore[return-value]
        backend = _backends[key] = open_backend()
        backend.when_closed(lambda: _forget(key, backend))
        return backend


def holds(path: Path) -> bool:
    """Whether this process holds the store file at ``path`` open (then it is its owner: see
    :mod:`pcmem.compose.owned`)."""
    with _guard:
        return key_for(path) in _backends


def _forget(key: str, backend: object) -> None:
    with _guard:
        if _backends.get(key) is backend:
            del _backends[key]


def open_count() -> int:
    """How many store files this process holds open (for tests and diagnostics)."""
    with _guard:
        return len(_backends)
