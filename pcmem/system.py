"""Which operating system pcmem runs on, named in one place, and the facilities some systems lack.

pcmem asks for a facility where it can (``hasattr(os, "getuid")``); it names the system only where one facility
means different things on different systems: the layout of ``struct flock`` (:mod:`pcmem.store.duckdb.lock_probe`),
the longest Unix socket path and how a peer's credentials are read (:mod:`pcmem.owner.transport`), where a process's
state is read (``/proc`` on Linux, ``ps`` on macOS: :mod:`pcmem.owner.processes`), which owner transport a system
uses, and which file checks have a meaning (Windows reports 0o777 for folders and has no user ids).

Every such choice reads :data:`KIND` when it is made, so the tests' platform shims (``tests/emulate/``) can run the
macOS and Windows branches on Linux by setting it in a subprocess (each shim says what it emulates and what it
cannot).

Standard library only, and nothing of pcmem: the lowest layer.
"""

from __future__ import annotations

import os
import sys
from typing import Literal

SystemKind = Literal["linux", "macos", "windows", "unix"]


def _kind() -> SystemKind:
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "macos"
    if os.name == "nt":
        return "windows"
    return "unix"  # the BSDs and the rest: POSIX, without Linux's /proc


#: The system, as pcmem's choices between systems read it.
KIND: SystemKind = _kind()


#: Add to every ``os.open`` of a file: Windows opens a descriptor in text mode unless told (``\n`` becomes ``\r\n``
#: on write; a read stops at a Ctrl-Z byte). 0 elsewhere.
BINARY: int = getattr(os, "O_BINARY", 0)


def fsync_flags() -> int:
    """How to open an existing file only to fsync it: Windows flushes only a descriptor that may write
    (``FlushFileBuffers`` needs write access), POSIX any."""
    return (os.O_RDWR if KIND == "windows" else os.O_RDONLY) | BINARY


def user_id() -> int | None:
    """This process's user id, or ``None`` where the system has none (Windows)."""
    getuid = getattr(os, "getuid", None)
    return None if getuid is None else int(getuid())


def file_modes_meaningful() -> bool:
    """Whether a file's mode bits say who may read it (POSIX). Windows keeps that in ACLs and reports 0o666/0o777
    for every file and folder, so checking or setting 0600/0700 there says nothing."""
    return KIND != "windows" and user_id() is not None


#: Why pcmem skips the mode checks here, in one line (``pcmem doctor`` says it where it skips them).
NO_FILE_MODES = ("Windows has no file modes (it reports 0o777 for folders): who may read pcmem's files is decided by "
                 "the ACLs of the folders they are in (your profile's folders are yours alone)")
