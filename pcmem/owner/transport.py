"""How a store's owner and its clients reach each other: one small interface, and the Unix socket that implements it
on Linux and macOS (:mod:`pcmem.owner.pipes` has the other: Windows' named pipe).

A :class:`Transport` answers these questions, and nothing above it knows how:

- :meth:`~Transport.places`: where the owner of a file listens (best first: the owner takes the first it can, a
  client tries each), and why any place was refused;
- :meth:`~Transport.listen`: start listening there so that only this user's processes can connect; the
  :class:`Listening` it gives accepts connections until it is closed (closing wakes an ``accept`` under way, and
  takes the address away unless a newer owner listens there already);
- :meth:`~Transport.connect`: reach a listening owner (``OSError`` when nobody listens there, :class:`NotYoursError`
  when whoever listens is not this user);
- :meth:`~Transport.admit`: the owner's check of a new connection, on the connection's own thread (``NotYoursError``
  refuses it);
- :meth:`~Transport.peer`: who is at the other end of a connection (pid and uid, where the system says).

A connection is socket-like (:class:`Connection`): ``sendall``, ``send``, ``recv``, ``settimeout`` (``recv`` then
raises ``TimeoutError``), ``shutdown``, ``close``.

:class:`UnixSocketTransport` checks the peer's uid with what the kernel says of the socket: ``SO_PEERCRED`` on Linux,
``LOCAL_PEERCRED`` (a ``struct xucred``) and ``LOCAL_PEERPID`` on macOS. A Unix socket address holds 108 bytes on
Linux, 104 on macOS: longer paths are bound and reached through a descriptor of their folder on Linux
(``/proc/self/fd``); on macOS a place that long is skipped (:mod:`pcmem.owner.address` gives macOS a short one).

:func:`current` picks the system's transport: the Unix socket where the system has one, else the authenticated
pipe; ``$PCMEM_OWNER_TRANSPORT`` (``unix`` or ``pipe``) overrides it, so that the tests run the pipe on Linux too.

Standard library only: ``pcmem search`` beside an owner dials without importing pydantic or DuckDB.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import stat
import struct
import time
from collections.abc import Iterator
from pathlib import Path

from pcmem import settings, system
from pcmem.owner import address
from pcmem.owner.address import FileIdentity, Places
from pcmem.owner.connections import (
    PATH_LIMIT,
    Connection,
    Listening,
    NotYoursError,
    Peer,
    Transport,
    path_limit,
)

__all__ = ["PATH_LIMIT", "Connection", "Listening", "NotYoursError", "Peer", "SocketListening", "Transport",
           "UnixSocketTransport", "current", "path_limit"]

log = logging.getLogger(__name__)


class UnixSocketTransport:
    """A Unix socket in a private per-user folder (:mod:`pcmem.owner.address`), mode 0600, peer uid checked."""

    name = "unix"

    def places(self, identity: FileIdentity, *, create: bool) -> Places:
        found = address.places(identity, create=create)
        if system.KIND == "linux":
            return found  # any length: through the folder's descriptor
        fitting = Places(refused=found.refused)
        for where in found.addresses:
            if _fits(where):
                fitting.addresses.append(where)
            else:
                fitting.refused.append(f"{where} is longer than a Unix socket address holds ({path_limit()} bytes)")
        return fitting

    def listen(self, where: Path) -> SocketListening:
        """A listening socket at ``where``, born 0600 (no moment at which others could connect); a leftover socket
        there is replaced (the caller holds the store file, so whoever made it is gone), and the folder's leftovers
        of owners that were killed are removed. Raises OSError."""
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
            listening = SocketListening(listener, where)
        except BaseException:
            listener.close()
            raise
        for gone in sweep_stale_sockets(where.parent, keep=where):
            log.info("pcmem owner: removed %s, left by an owner that did not stop cleanly", gone.name)
        return listening

    def connect(self, where: Path, timeout: float) -> socket.socket:
        connection = connect_path(where, timeout=timeout)
        try:
            self._check(connection, f"the socket {where} is served by")
        except BaseException:
            connection.close()
            raise
        return connection

    def admit(self, connection: Connection) -> Peer:
        return self._check(connection, "a connection from")

    def _check(self, connection: Connection, who: str) -> Peer:
        peer = self.peer(connection)
        mine = system.user_id()
        if peer.uid is not None and peer.uid != mine:
            raise NotYoursError(f"{who} uid {peer.uid}, not by you (uid {mine}): refusing it")
        return peer

    def peer(self, connection: Connection) -> Peer:
        if not isinstance(connection, socket.socket):
            return Peer(None, None)
        if system.KIND == "linux" and hasattr(socket, "SO_PEERCRED"):
            raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _ = struct.unpack("3i", raw)
            return Peer(pid or None, uid)
        if system.KIND == "macos":
            return macos_peer(connection)
        return Peer(None, None)  # another system: the folder's mode 0700 is the only check

    def older_places(self, identity: FileIdentity) -> list[Path]:
        return address.older_places(identity)


# macOS <sys/un.h>: getsockopt(fd, SOL_LOCAL, LOCAL_PEERCRED) fills a ``struct xucred`` {u_int cr_version; uid_t
# cr_uid; short cr_ngroups; gid_t cr_groups[NGROUPS]} (NGROUPS 16), LOCAL_PEERPID a pid_t. Python's socket module
# names none of them on every version, hence the numbers.
SOL_LOCAL = 0
LOCAL_PEERCRED = 0x001
LOCAL_PEERPID = 0x002
XUCRED_VERSION = 0
XUCRED = struct.Struct("=IIh2x16I")


def parse_xucred(raw: bytes) -> int | None:
    """The uid in a ``struct xucred`` as macOS fills it; ``None`` for another version or a short answer."""
    if len(raw) < XUCRED.size:
        return None
    version, uid, *_ = XUCRED.unpack_from(raw)
    return uid if version == XUCRED_VERSION else None


def macos_peer(connection: socket.socket) -> Peer:
    """The peer's uid (LOCAL_PEERCRED) and pid (LOCAL_PEERPID, macOS 10.8+), each ``None`` when the system refuses."""
    try:
        uid = parse_xucred(connection.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, XUCRED.size))
    except OSError:
        uid = None
    try:
        pid = struct.unpack("=i", connection.getsockopt(SOL_LOCAL, LOCAL_PEERPID, 4)[:4])[0] or None
    except (OSError, struct.error):
        pid = None
    return Peer(pid, uid)


class SocketListening:
    """A listening Unix socket. :meth:`close` wakes an ``accept`` under way and removes the socket file unless it is
    no longer this listener's (a newer owner may have bound its own there)."""

    def __init__(self, listener: socket.socket, where: Path) -> None:
        self._listener, self.address = listener, where
        self._inode = os.stat(where).st_ino

    def accept(self) -> socket.socket:
        connection, _ = self._listener.accept()
        return connection

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if os.stat(self.address).st_ino == self._inode:
                self.address.unlink()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept() in another thread (close() alone does not)
        self._listener.close()


def _fits(where: Path) -> bool:
    return len(os.fsencode(where)) <= path_limit()


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
    """``where`` as a socket address: itself, or on Linux (longer than :func:`path_limit`) through
    ``/proc/self/fd/N`` of its folder's descriptor, which the kernel resolves like the folder itself, for as long as
    the descriptor is open. Elsewhere a path that long is an OSError."""
    full = os.fspath(where)
    if _fits(where):
        yield full
        return
    if system.KIND != "linux":
        raise OSError(errno.ENAMETOOLONG, f"the socket path {full} is longer than {path_limit()} bytes")
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_PATH", 0)
    folder = os.open(where.parent, flags)
    try:
        short = f"/proc/self/fd/{folder}/{where.name}"
        if len(os.fsencode(short)) > path_limit() or not os.path.isdir(f"/proc/self/fd/{folder}"):
            raise OSError(errno.ENAMETOOLONG, f"the socket path {full} is longer than {path_limit()} bytes")
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
    with contextlib.suppress(OSError):
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


def current() -> Transport:
    """This system's transport: ``$PCMEM_OWNER_TRANSPORT`` when set (tests), else the Unix socket where the system
    has one (Linux, macOS), else the authenticated pipe (Windows)."""
    from pcmem.owner import pipes

    chosen = settings.owner_transport()
    if chosen is None:
        chosen = "unix" if hasattr(socket, "AF_UNIX") and system.KIND != "windows" else "pipe"
    return _UNIX if chosen == "unix" else pipes.transport()


_UNIX = UnixSocketTransport()
