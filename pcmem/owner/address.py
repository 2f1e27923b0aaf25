"""Where a store's owner listens: ``<runtime folder>/<st_dev>-<st_ino>.sock``.

The runtime folder is ``$XDG_RUNTIME_DIR/pcmem`` when the system offers a runtime folder this user owns, else
``/tmp/pcmem-<uid>``; it is created 0700 and refused when another user owns it or others may enter it, so only the
same user can reach a socket in it (the socket itself is 0600, and the owner checks the peer's uid where the OS
says). The name comes from the file's identity (device, inode), not its path: two names of one file (a symlink, a
relative path, a hard link) find the same owner.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pcmem import settings
from pcmem.errors import StorePermissionError

FOLDER_MODE = 0o700
SOCKET_MODE = 0o600


class UnsafeRuntimeFolderError(StorePermissionError):
    """The runtime folder belongs to another user or others may enter it: pcmem neither listens nor connects there."""


@dataclass(frozen=True)
class FileIdentity:
    """A store file's identity: what two paths of one file share."""

    device: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity | None:
        """The identity of the file at ``path`` (symlinks followed), or ``None`` when there is no such file."""
        try:
            info = path.stat()
        except OSError:
            return None
        return cls(info.st_dev, info.st_ino)

    def as_json(self) -> list[int]:
        return [self.device, self.inode]


def runtime_folder() -> Path:
    """The private folder the sockets live in, created 0700 if missing; UnsafeRuntimeFolderError when unsafe."""
    base = settings.runtime_dir()
    if base is not None and _owned_by_me(base):
        folder = base / "pcmem"
    else:
        folder = Path(tempfile.gettempdir()) / f"pcmem-{os.getuid()}"
    try:
        folder.mkdir(mode=FOLDER_MODE, exist_ok=True)
        info = os.lstat(folder)
    except OSError as error:
        raise UnsafeRuntimeFolderError(f"cannot make the runtime folder {folder}: {error.strerror}") from None
    check_private_folder(folder, info)
    return folder


def check_private_folder(folder: Path, info: os.stat_result) -> None:
    """Refuse a folder that is a link, belongs to another user, or that others may enter or list."""
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeRuntimeFolderError(f"the runtime folder {folder} is not a folder (a link or a file is there)")
    if info.st_uid != os.getuid():
        raise UnsafeRuntimeFolderError(f"the runtime folder {folder} belongs to uid {info.st_uid}, not to you "
                                       f"(uid {os.getuid()}): pcmem will not listen or connect there")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise UnsafeRuntimeFolderError(f"the runtime folder {folder} is mode {stat.S_IMODE(info.st_mode):o}; it must "
                                       "be 700 (only you may enter it): `chmod 700` it")


def socket_path(identity: FileIdentity) -> Path:
    """The owner's socket for the file with ``identity``."""
    return runtime_folder() / f"{identity.device:x}-{identity.inode:x}.sock"


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
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(candidate))
    except OSError as error:
        return error.errno == errno.ECONNREFUSED
    finally:
        probe.close()
    return False


def _owned_by_me(folder: Path) -> bool:
    try:
        info = os.stat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
