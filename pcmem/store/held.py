"""The stores this process holds: one backend per store, shared by every runtime that opens it.

DuckDB lets one process hold one database instance per file: two instances of one path in one process lose writes to
"Conflict on update!" (two write locks that do not know about each other). So :func:`acquire` hands every runtime of
a store the same backend — its write lock, its cursors and its caches — counting the users; the backend closes the
store when the last one closes it.

A store is known by a key its engine gives (a file's device and inode, not its name: a hard link, a bind mount, or
another spelling on a case-insensitive file system is the same file under another name, and two instances on it each
wrote without knowing of the other — half the acknowledged writes were lost). A store that does not exist yet is
known by its resolved path until the backend creates it, then by its identity.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Protocol, TypeVar


class Shareable(Protocol):
    def share(self) -> bool:
        """Count one more user; False when the backend is already closed."""

    def when_closed(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the last user closed the backend."""

    def close_for_exit(self) -> None:
        """Close the store now, whatever its users (the process is exiting: :mod:`pcmem.compose.exit`)."""


B = TypeVar("B", bound=Shareable)
#: The key of one store, computed afresh each time it is asked (a new file gets its identity once created).
KeyOf = Callable[[], Hashable]
_backends: dict[Hashable, tuple[Shareable, KeyOf]] = {}
_guard = threading.Lock()


def acquire(key_of: KeyOf, open_backend: Callable[[], B]) -> B:
    """The process's backend for the store ``key_of`` names (one more user of it), opened with ``open_backend`` if
    nobody holds it."""
    with _guard:
        key = key_of()
        held = _backends.get(key)
        # The held store must still be the one its own key names: an inode freed by a deleted store can be reused by
        # an unrelated new file.
        if held is not None and held[1]() == key and held[0].share():
            return held[0]  # type: ignore[return-value]
        backend = open_backend()
        key = key_of()  # a store created just now: its identity, so its other names find it
        _backends[key] = (backend, key_of)
        backend.when_closed(lambda: _forget(key, backend))
        return backend


def _forget(key: Hashable, backend: object) -> None:
    with _guard:
        held = _backends.get(key)
        if held is not None and held[0] is backend:
            del _backends[key]


def open_count() -> int:
    """How many stores this process holds open (for tests and diagnostics)."""
    with _guard:
        return len(_backends)


def holds(key: Hashable) -> bool:
    """Whether this process has a backend open for the store with ``key`` (then it must not open and close the file
    itself: closing any descriptor of a file drops the process's POSIX locks on it, DuckDB's included)."""
    with _guard:
        return key in _backends


def close_all() -> None:
    """Close every store this process holds, whatever their users (at exit: :mod:`pcmem.compose.exit`)."""
    with _guard:
        held = [backend for backend, _ in _backends.values()]
    for backend in held:
        backend.close_for_exit()
