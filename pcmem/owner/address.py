"""Where a store's owner listens: chosen from the file and the user's account, never from the environment.

Two processes of one user that open the same store file must find each other whatever they were started with: a
terminal, cron, ``env -i``, or an MCP host that passes a scrubbed environment (the MCP SDK drops ``XDG_RUNTIME_DIR``).
So the place depends only on what every such process sees alike:

- **the folder**: ``<home>/.cache/pcmem/run``, with the home of the account (``pwd``, not ``$HOME``), created 0700.
  No other user can create anything in a home they cannot write, so nobody can take the place first. When the
  account has no usable home (none, not a folder, not the user's, or others may write it), ``/tmp/pcmem-<uid>``
  (``/tmp`` itself, not ``$TMPDIR``), refused when another user made it or others may enter it;
- **the name**: the file's identity (device and inode, not its path), so every name of one file (a symlink, a
  relative path, a hard link) finds the same owner.

The owner listens at the first of those places it can; a client tries each in turn. Paths longer than a Unix
socket address can hold are reached through the folder's descriptor on Linux (:mod:`pcmem.owner.transport`). macOS
has no such way, and its addresses hold 104 bytes: there a second folder comes between the two, the account's own
temporary folder as the system names it (``confstr(_CS_DARWIN_USER_TEMP_DIR)``, ``/var/folders/…/T``: private to
the user, short, the same for every process of the user whatever its environment), used when the home's path is
too long. The home stays first on macOS too: ``~/Library/Caches`` would be the native place for caches, but cleaning
tools empty it, and a socket removed under a running owner strands its clients; ``~/.cache`` is left alone, and is
where the model cache goes without ``$XDG_CACHE_HOME``. A sandboxed app sees neither the home's folder nor the
user's temporary folder (it gets its container's): it shares a store only with processes of its own sandbox.

**Older places.** pcmem before this listened in ``$XDG_RUNTIME_DIR/pcmem``, else in the temporary folder. Nothing
listens there any more; a client that finds the file held while nobody answers here looks there too (see
:func:`older_places`), only to say what it found: an older pcmem speaks another protocol and cannot serve it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pcmem import settings, system

try:
    import pwd
except ImportError:  # Windows: no password database (its owners meet through named pipes: pcmem.owner.pipes)
    pwd = None  # type: ignore[assignment]
from pcmem.errors import UnsafeRuntimeFolderError

FOLDER_MODE = 0o700
SOCKET_MODE = 0o600
#: Below the account's home: beside pcmem's model cache when ``$XDG_CACHE_HOME`` is unset (the place does not follow
#: that variable either: a process started without it must find the same folder).
HOME_FOLDER = (".cache", "pcmem", "run")


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

    @property
    def socket_name(self) -> str:
        return f"{self.device:x}-{self.inode:x}.sock"


@dataclass
class Places:
    """The owner's possible addresses for one file, best first, and why any other folder was refused."""

    addresses: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def folders() -> list[Path]:
    """The folders an owner may listen in, best first (see the module docstring); none depends on the environment.
    UnsafeRuntimeFolderError on a system without user ids (Windows: its owners meet through named pipes)."""
    uid = system.user_id()
    if uid is None:
        raise UnsafeRuntimeFolderError("this system has no user ids, so no private folder for a Unix socket")
    found = []
    home = _account_home(uid)
    if home is not None:
        found.append(home.joinpath(*HOME_FOLDER))
    if system.KIND == "macos":
        temporary = user_temporary_folder()
        if temporary is not None:
            found.append(temporary / "pcmem")
    found.append(Path("/tmp") / f"pcmem-{uid}")
    return found


#: ``_CS_DARWIN_USER_TEMP_DIR`` in macOS's <unistd.h> (Python's ``os.confstr_names`` may not list it).
DARWIN_USER_TEMP_DIR = 65537


def user_temporary_folder() -> Path | None:
    """macOS's per-user temporary folder (``/var/folders/…/T``, what ``$TMPDIR`` is set from), from the system, not
    the environment; ``None`` where the system does not say."""
    try:
        answer = os.confstr(os.confstr_names.get("CS_DARWIN_USER_TEMP_DIR", DARWIN_USER_TEMP_DIR))
    except (OSError, ValueError, AttributeError):
        return None
    return Path(answer) if answer and os.path.isabs(answer) else None


def places(identity: FileIdentity, *, create: bool) -> Places:
    """Where the owner of the file with ``identity`` listens. ``create`` (the owner): make missing folders, 0700."""
    result = Places()
    for folder in folders():
        try:
            result.addresses.append(private_folder(folder, create=create) / identity.socket_name)
        except UnsafeRuntimeFolderError as refused:
            result.refused.append(str(refused))
    return result


def socket_path(identity: FileIdentity) -> Path:
    """Where a client looks first for the owner of the file with ``identity`` (where an owner listens unless that
    folder cannot be used: :func:`places` has every place). UnsafeRuntimeFolderError when no place can be used."""
    found = places(identity, create=False)
    if not found.addresses:
        raise UnsafeRuntimeFolderError("; ".join(found.refused))
    return found.addresses[0]


def runtime_folder() -> Path:
    """The folder this user's owners listen in first, made 0700 if missing; UnsafeRuntimeFolderError when none of
    :func:`folders` can be used."""
    refused = []
    for folder in folders():
        try:
            return private_folder(folder, create=True)
        except UnsafeRuntimeFolderError as error:
            refused.append(str(error))
    raise UnsafeRuntimeFolderError("; ".join(refused))


def private_folder(folder: Path, *, create: bool) -> Path:
    """``folder``, checked private (and made, 0700, with its missing parents, when ``create``); a folder that is
    missing and not made is returned as it is (nothing can listen there). UnsafeRuntimeFolderError otherwise."""
    if create:
        try:
            _make_folders(folder)
        except OSError as error:
            raise UnsafeRuntimeFolderError(f"cannot make the runtime folder {folder}: {error.strerror}") from None
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return folder
    except OSError as error:
        raise UnsafeRuntimeFolderError(f"cannot use the runtime folder {folder}: {error.strerror}") from None
    check_private_folder(folder, info)
    return folder


def _make_folders(folder: Path) -> None:
    missing = []
    for parent in (folder, *folder.parents):
        if parent.exists():
            break
        missing.append(parent)
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):
            each.mkdir(mode=FOLDER_MODE)


def check_private_folder(folder: Path, info: os.stat_result) -> None:
    """Refuse a folder that is a link, belongs to another user, or that others may enter or list."""
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeRuntimeFolderError(f"the runtime folder {folder} is not a folder (a link or a file is there)")
    if info.st_uid != system.user_id():
        raise UnsafeRuntimeFolderError(f"the runtime folder {folder} belongs to uid {info.st_uid}, not to you "
                                       f"(uid {system.user_id()}): pcmem will not listen or connect there")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise UnsafeRuntimeFolderError(f"the runtime folder {folder} is mode {stat.S_IMODE(info.st_mode):o}; it must "
                                       "be 700 (only you may enter it): `chmod 700` it")


def _account_home(uid: int) -> Path | None:
    """The account's home (from the password database, not ``$HOME``) when it is a folder of this user that no one
    else may write; else ``None``."""
    home = _home_of(uid)
    if home is None:
        return None
    try:
        info = os.stat(home)
    except OSError:  # no such folder
        return None
    if not home.is_absolute() or not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
        return None
    if stat.S_IMODE(info.st_mode) & 0o022:
        return None  # others could replace what pcmem makes there
    return home


@functools.cache
def _home_of(uid: int) -> Path | None:
    """The home the password database gives ``uid`` (looked up once per process), or ``None`` (a container's bare
    uid has no entry)."""
    if pwd is None:
        return None
    try:
        return Path(pwd.getpwuid(uid).pw_dir)
    except KeyError:
        return None


def older_places(identity: FileIdentity) -> list[Path]:
    """Where older pcmem releases (before owners listened in the account's own folder) listened for this file:
    ``$XDG_RUNTIME_DIR/pcmem`` (as this process sees it, and the usual ``/run/user/<uid>``), then ``<temporary
    folder>/pcmem-<uid>``. None on a system without user ids."""
    uid = system.user_id()
    if uid is None:
        return []
    bases = [base for base in (settings.runtime_dir(), Path(f"/run/user/{uid}")) if base is not None]
    candidates = [base / "pcmem" for base in bases]
    candidates.append(Path(tempfile.gettempdir()) / f"pcmem-{uid}")
    seen: list[Path] = []
    for folder in candidates:
        address = folder / identity.socket_name
        if address not in seen:
            seen.append(address)
    return seen
