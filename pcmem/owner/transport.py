"""How a store's owner and its clients reach each other: one small interface, and its Linux implementation.

A :class:`Transport` answers four questions, and nothing above it knows how:

- :meth:`~Transport.places`: where the owner of a file listens (best first: the owner takes the first it can, a
  client tries each), and why any place was refused;
- :meth:`~Transport.listen`: start listening there so that only this user's processes can connect;
- :meth:`~Transport.connect`: reach a listening owner (``OSError`` when nobody listens there);
- :meth:`~Transport.peer`: who is at the other end of a connection (pid and uid, where the system says).

A connection is socket-like: ``sendall``, ``recv``, ``send``, ``settimeout``, ``shutdown``, ``close``. This module has
the Unix socket of Linux (:class:`UnixSocketTransport`): the peer's uid and pid from ``SO_PEERCRED``, and paths longer
than a socket address holds (108 bytes) bound and reached through a descriptor of their folder. Other systems plug
in here: macOS with ``getpeereid``/``LOCAL_PEERPID`` and its 104-byte limit, Windows with a named pipe
or ``multiprocessing.connection``'s authenticated listener behind a socket-like adapter; :func:`current` picks one.

Standard library only: ``pcmem search`` beside an owner dials without importing pydantic or DuckDB.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import struct
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pcmem.owner import address
from pcmem.owner.address import FileIdentity, Places

#: The longest path a Unix socket address holds (``sun_path``): 108 bytes on Linux, 104 on macOS and the BSDs.
PATH_LIMIT = 108 if sys.platform.startswith("linux") else 104


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a connection, as far as the system says."""

    pid: int | None
    uid: int | None


class Transport(Protocol):
    """Where and how an owner listens and a client connects (see the module docstring)."""

    def places(self, identity: FileIdentity, *, create: bool) -> Places: ...

    def listen(self, where: Path) -> socket.socket: ...

    def connect(self, where: Path, timeout: float) -> socket.socket: ...

    def peer(self, connection: socket.socket) -> Peer: ...


class UnixSocketTransport:
    """A Unix socket in a private per-user folder (:mod:`pcmem.owner.address`), mode 0600, peer uid checked."""

    def places(self, identity: FileIdentity, *, create: bool) -> Places:
        return address.places(identity, create=create)

    def listen(self, where: Path) -> socket.socket:
        """A listening socket at ``where``, born 0600 (no moment at which others could connect); a leftover socket
        there is replaced (the caller holds the store file, so whoever made it is gone). Raises OSError."""
        with contextlib.suppress(FileNotFoundError):
            where.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            old_mask = os.umask(0o177)
            try:
                with _reachable(where) as short:
                    listener.bind(short)
            finally:
                os.umask(old_mask)
            os.chmod(where, address.SOCKET_MODE)
            listener.listen(64)
        except BaseException:
            listener.close()
            raise
        return listener

    def connect(self, where: Path, timeout: float) -> socket.socket:
        return connect_path(where, timeout=timeout)

    def peer(self, connection: socket.socket) -> Peer:
        option = getattr(socket, "SO_PEERCRED", None)
        if option is None or not sys.platform.startswith("linux"):
            return Peer(None, None)  # macOS: getpeereid / LOCAL_PEERPID
        raw = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
        pid, uid, _ = struct.unpack("3i", raw)
        return Peer(pid or None, uid)


def connect_path(where: Path, *, timeout: float) -> socket.socket:
    """A connection to the Unix socket at ``where``. ``timeout`` bounds connecting (a full backlog — an owner that
    does not accept, e.g. a stopped one — fails at once instead of blocking). Raises OSError when nobody listens."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(timeout)
        with _reachable(where) as short:
            connection.connect(short)
    except BaseException:
        connection.close()
        raise
    return connection


@contextlib.contextmanager
def _reachable(where: Path) -> Iterator[str]:
    """``where`` as a socket address: itself, or (longer than :data:`PATH_LIMIT`) through ``/proc/self/fd/N`` of its
    folder's descriptor, which the kernel resolves like the folder itself, for as long as the descriptor is open."""
    full = os.fspath(where)
    if len(os.fsencode(full)) <= PATH_LIMIT:
        yield full
        return
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_PATH", 0)
    folder = os.open(where.parent, flags)
    try:
        short = f"/proc/self/fd/{folder}/{where.name}"
        if len(os.fsencode(short)) > PATH_LIMIT or not os.path.isdir(f"/proc/self/fd/{folder}"):
            raise OSError(f"the socket path {full} is longer than {PATH_LIMIT} bytes")
        yield short
    finally:
        os.close(folder)


#: A socket bound this many seconds ago that refuses connections is an owner's leftover (killed with SIGKILL, or a
#: crash): an owner listens within microseconds of binding, so no live owner is ever this old and still refusing.
STALE_AFTER = 60.0


def sweep_stale_sockets(folder: Path, *, keep: Path, now: float | None = None) -> list[Path]:
    """Remove the sockets in ``folder`` that no process listens on any more; return what was removed.

    A killed owner cannot remove its socket, and with one socket per store file the folder would only grow. A socket
    is stale when connecting is refused (nobody listens) and it was bound over :data:`STALE_AFTER` seconds ago (an
    owner between bind and listen is never removed). ``keep`` (the caller's own socket) is left alone.
    """
    now = time.time() if now is None else now
    removed: list[Path] = []
    for candidate in folder.glob("*.sock"):
        if candidate == keep or not _refuses(candidate, now):
            continue
        with contextlib.suppress(OSError):
            candidate.unlink()
            removed.append(candidate)
    return removed


def _refuses(candidate: Path, now: float) -> bool:
    try:
        info = os.lstat(candidate)
    except OSError:
        return False
    if not stat.S_ISSOCK(info.st_mode) or now - info.st_mtime < STALE_AFTER:
        return False
    try:
        probe = connect_path(candidate, timeout=1.0)
    except OSError as error:
        return error.errno == errno.ECONNREFUSED
    probe.close()
    return False


_CURRENT = UnixSocketTransport()


def current() -> Transport:
    """This system's transport."""
    return _CURRENT
