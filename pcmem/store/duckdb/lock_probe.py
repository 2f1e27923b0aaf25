"""Who holds a store file: DuckDB takes a POSIX lock on the file it opens, and this asks the system about it without
taking or releasing one (so it can name the other process in a "store is locked" error)."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

from pcmem import system

try:
    import fcntl
except ImportError:  # Windows: no POSIX locks to ask; connection.connect then treats an I/O error as "held"
    fcntl = None  # type: ignore[assignment]

#: ``struct flock`` as each system lays it out (native alignment), and where its type and pid are:
#: Linux ``{short l_type; short l_whence; off_t l_start; off_t l_len; pid_t l_pid}``, macOS (and the BSDs but
#: FreeBSD) ``{off_t l_start; off_t l_len; pid_t l_pid; short l_type; short l_whence}``. Another system is not
#: asked: a wrong layout would name a wrong process.
FLOCK_LAYOUTS = {"linux": "hhqqi", "macos": "qqihh"}


def pack_probe(layout: str, kind: int, whence: int) -> bytes:
    """A ``struct flock`` asking about the whole file (start 0, length 0) for a lock of ``kind``."""
    if layout == FLOCK_LAYOUTS["macos"]:
        return struct.pack(layout, 0, 0, 0, kind, whence)
    return struct.pack(layout, kind, whence, 0, 0, 0)


def unpack_answer(layout: str, answer: bytes) -> tuple[int, int]:
    """The lock type and the holder's pid in the ``struct flock`` F_GETLK filled in."""
    if layout == FLOCK_LAYOUTS["macos"]:
        _, _, pid, kind, _ = struct.unpack(layout, answer)
    else:
        kind, _, _, _, pid = struct.unpack(layout, answer)
    return kind, pid


def can_ask() -> bool:
    """Whether this system says who holds a file's lock (:func:`lock_holder` answers ``None`` otherwise)."""
    return fcntl is not None and system.KIND in FLOCK_LAYOUTS


def lock_holder(path: Path) -> int | None:
    """The pid of another process holding DuckDB's lock on ``path`` (0 when the system does not say), else None.

    Asked with F_GETLK, which neither takes nor releases a lock (so it cannot drop this process's own locks)."""
    if not can_ask():
        return None
    layout = FLOCK_LAYOUTS[system.KIND]
    # Non-blocking: opening a FIFO (or a device) someone named as the store must not wait for a writer. Not inherited
    # by children without O_CLOEXEC either (PEP 446), a name Windows' Python lacks.
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None  # not a store file: opening it says so
        answer = fcntl.fcntl(descriptor, fcntl.F_GETLK, pack_probe(layout, fcntl.F_WRLCK, os.SEEK_SET))
        kind, pid = unpack_answer(layout, answer)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return None if kind == fcntl.F_UNLCK else pid


def describe_process(pid: int) -> str:
    if not pid:
        return "another process"
    try:
        name = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        name = ""  # no /proc (macOS, Windows): the pid alone
    return f"process {pid} ({name})" if name else f"process {pid}"
