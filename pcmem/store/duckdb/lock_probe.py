"""Who holds a store file: DuckDB takes a POSIX lock on the file it opens, and this asks the system about it without
taking or releasing one (so it can name the other process in a "store is locked" error)."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no POSIX locks to ask; connection.connect then treats an I/O error as "held"
    fcntl = None  # type: ignore[assignment]


def lock_holder(path: Path) -> int | None:
    """The pid of another process holding DuckDB's lock on ``path`` (0 when the system does not say), else None.

    Asked with F_GETLK, which neither takes nor releases a lock (so it cannot drop this process's own locks)."""
    if fcntl is None:
        return None
    try:  # non-blocking: opening a FIFO (or a device) someone named as the store must not wait for a writer
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None  # not a store file: opening it says so
        probe = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        answer = fcntl.fcntl(descriptor, fcntl.F_GETLK, probe)
        kind, _, _, _, pid = struct.unpack("hhqqi", answer)
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
        name = ""
    return f"process {pid} ({name})" if name else f"process {pid}"
