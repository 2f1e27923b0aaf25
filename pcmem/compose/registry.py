"""One storage backend per store file per process, shared by every runtime that opens it.

DuckDB lets one process hold one database instance per file: two instances of one path in one process fail with
"Unique file handle conflict" (shared mode) or lose writes to "Conflict on update!" (two write locks that do not
know about each other). So :func:`acquire` hands every runtime of a file the same backend — its write lock, its
cursor pool and its caches — counting the users; the backend closes the file when the last one closes it.

A file is known by its identity (device and inode), not by its name: a hard link, a bind mount, or another spelling
on a case-insensitive file system (``Memory.duckdb`` on macOS or Windows) is the same file under another name, and
two instances on it each wrote without knowing of the other — half the acknowledged writes were lost. A file that
does not exist yet is known by its resolved path until the backend creates it, then by its identity.

The first runtime's options decide for the process: a later ``shared=True`` on a path this process already holds
exclusively uses the held instance (and the reverse uses the shared one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from pcmem.store.duckdb.files import file_identity


class Shareable(Protocol):
    def share(self) -> bool:
        """Count one more user; False when the backend is already closed."""

    def when_closed(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the last user closed the backend."""

    def close_for_exit(self) -> None:
        """Close the file now, whatever its users (the process is exiting: :mod:`pcmem.compose.exit`)."""


B = TypeVar("B", bound=Shareable)
Key = tuple[int, int] | str
_backends: dict[Key, tuple[Shareable, Path]] = {}
_guard = threading.Lock()


def key_for(path: Path) -> Key:
    """The identity of a store file: (device, inode) when it exists, else its path (``path`` is resolved already:
    see :func:`pcmem.store.duckdb.files.store_path`)."""
    return file_identity(path) or str(path)


def acquire(path: Path, open_backend: Callable[[], B]) -> B:
    """The process's backend for ``path`` (one more user of it), opened with ``open_backend`` if nobody holds it."""
    with _guard:
        key = key_for(path)
        held = _backends.get(key)
        # The held file must still be the one at the backend's own path: an inode freed by a deleted store (shared
        # mode keeps no descriptor between transactions) can be reused by an unrelated new file.
        if held is not None and key_for(held[1]) == key and held[0].share():
            return held[0]  # type: ignore[return-value]
        backend = open_backend()
        key = key_for(path)  # a store created just now: its identity, so its other names find it
        _backends[key] = (backend, path)
        backend.when_closed(lambda: _forget(key, backend))
        return backend


def _forget(key: Key, backend: object) -> None:
    with _guard:
        held = _backends.get(key)
        if held is not None and held[0] is backend:
            del _backends[key]


def open_count() -> int:
    """How many store files this process holds open (for tests and diagnostics)."""
    with _guard:
        return len(_backends)


def holds(path: Path) -> bool:
    """Whether this process has a backend open for ``path`` (then it must not open and close the file itself:
    closing any descriptor of a file drops the process's POSIX locks on it, DuckDB's included)."""
    with _guard:
        return key_for(path) in _backends


def close_all() -> None:
    """Close every store file this process holds, whatever their users (at exit: :mod:`pcmem.compose.exit`)."""
    with _guard:
        held = [backend for backend, _ in _backends.values()]
    for backend in held:
        backend.close_for_exit()
