"""Files and folders pcmem creates are the user's alone from the instant they exist, whatever the umask.

A mode set after creation comes too late: another local user who opens the path in between keeps that handle, and
reads through it everything written later (a file's mode is checked at open, never again). So a file is created
with mode 0600 in the ``open`` call itself, and a folder with 0700 in ``mkdir`` (the umask can only take bits away,
so neither is ever more open than that). A file that another program creates for pcmem — DuckDB makes its database
file with the umask's mode — is built inside a fresh 0700 folder that no one else may enter, then linked into place
(:func:`create_privately`).

The process umask is never changed: it belongs to the whole process, and the threads of an application that
embeds pcmem create files of their own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pcmem import system

FILE_MODE = 0o600  # agent memory is private: owner-only files ...
FOLDER_MODE = 0o700  # ... and folders, the intermediate ones too
STAGING_SUFFIX = ".pcmem-new"  # the folder a file is built in before it is linked into place (see create_privately)


def make_private_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and every missing parent with mode 0700 (``mkdir(parents=True)`` gives the intermediate ones
    the umask's mode, 0755 or even 0777); returns the folders created. Raises OSError."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    created = []
    for new in reversed(missing):
        try:
            new.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue
        # mkdir's 0700 is filtered by the umask, which can only remove bits: a umask like 0o300 leaves the owner
        # unable to write into the folder; chmod gives them back (no other user can have entered it meanwhile).
        os.chmod(new, FOLDER_MODE)
        created.append(new)
    return created


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of a new file, owner-only from its creation; fails if ``path`` exists (a file someone else made,
    perhaps readable by others, is never adopted)."""
    return os.open(path, flags | os.O_CREAT | os.O_EXCL | system.BINARY, FILE_MODE)


def create_privately(path: Path, build: Callable[[Path], None]) -> bool:
    """Make the file ``path`` with ``build(staged)``, a function that creates it at the path it is given with any
    mode (DuckDB uses the umask's), so that no other user can open it at any moment.

    ``build`` works in a new folder next to ``path`` (mode 0700: no one else can open anything inside); the file
    is made 0600 there and hard-linked to ``path``, which fails instead of replacing a file another process made
    meanwhile. Returns True when this call created ``path``, False when it already existed by then. The staging
    folder is removed whatever happens (one left by a killed process, named with its pid, goes at the next call).
    Raises OSError, or what ``build`` raises."""
    _remove_abandoned_staging(path)
    staging = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}{STAGING_SUFFIX}")
    staging.mkdir(mode=FOLDER_MODE)
    try:
        os.chmod(staging, FOLDER_MODE)
        staged = staging / path.name
        build(staged)
        os.chmod(staged, FILE_MODE)
        try:
            os.link(staged, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: a rename, which may replace a file made just now
            if path.exists():
                return False
            os.rename(staged, path)
        with contextlib.suppress(OSError):  # the link is made; a file system that cannot sync a folder keeps it too
            fsync_folder(path.parent)
        return True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_abandoned_staging(path: Path) -> None:
    """Remove the staging folders of ``path`` whose creating process is gone (a kill between build and link)."""
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(STAGING_SUFFIX)):
            continue
        pid = name[len(prefix):-len(STAGING_SUFFIX)].partition(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path.parent / name, ignore_errors=True)


def _alive(pid: int) -> bool:
    if system.KIND == "windows":  # os.kill(pid, 0) there sends Ctrl-C to the process group pid: never ask
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's; Windows raises for other reasons: keep the folder
        return True
    return True


def fsync_folder(folder: Path) -> None:
    """Make the entries just made in ``folder`` durable: fsync the folder itself (POSIX). Windows cannot open a folder
    to sync it, and NTFS journals a folder's entries itself: nothing to do there. Raises OSError."""
    if system.KIND == "windows":
        return
    _fsync(folder, os.O_RDONLY)


def fsync_file(path: Path) -> None:
    """Make an existing file's contents durable, through a descriptor each system can flush. Raises OSError."""
    _fsync(path, system.fsync_flags())


def _fsync(path: Path, flags: int) -> None:
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
