"""Where a store's owner listens: ``<runtime folder>/<st_dev>-<st_ino>.sock``.

The runtime folder is ``$XDG_RUNTIME_DIR/pcmem`` when the system offers a runtime folder this user owns, else
``/tmp/pcmem-<uid>``; it is created 0700 and refused when another user owns it or others may enter it, so only the
same user can reach a socket in it (the socket itself is 0600, and the owner checks the peer's uid where the OS
says). The name comes from the file's identity (device, inode), not its path: two names of one file (a symlink, a
relative path, a hard link) find the same owner.
"""

from __future__ import annotations

import os
import stat
import tempfile
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


def _owned_by_me(folder: Path) -> bool:
    try:
        info = os.stat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
