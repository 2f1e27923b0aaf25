"""macOS, where it differs from Linux in what pcmem uses: run pcmem with ``PYTHONPATH=tests/emulate/macos`` (#41).

What this emulates, at interpreter start:

- **pcmem is told it runs on macOS** (``pcmem.system.KIND == "macos"``).
- **No ``SO_PEERCRED``** (Python's name is gone). ``getsockopt(SOL_LOCAL=0, LOCAL_PEERCRED=1)`` on a Unix socket
  answers a ``struct xucred`` laid out as macOS's kernel fills it (``cr_version`` 0, ``cr_uid``, ``cr_ngroups`` 1,
  ``cr_groups[16]``), and ``LOCAL_PEERPID=2`` a ``pid_t``, both built from what Linux's kernel says of the peer
  (``SO_PEERCRED``, which the shim reads by its number); another level-0 option on a Unix socket fails with
  ENOPROTOOPT (on Linux it would be an IP option).
- **Unix socket addresses hold 104 bytes**: ``bind``/``connect`` of a longer path raise ``OSError("AF_UNIX path too
  long")``, as Python on macOS does.
- **``struct flock`` in macOS's layout**: ``fcntl.fcntl(fd, F_GETLK, arg)`` takes and gives ``{off_t l_start; off_t
  l_len; pid_t l_pid; short l_type; short l_whence}``, translated to and from Linux's layout around the real call
  (so an argument in Linux's layout fails to unpack). The lock types keep Linux's numbers: Python's ``fcntl`` names
  each system's own.
- **No /proc for Python code**: ``open``, ``os.open``, ``os.stat``, ``os.lstat``, ``os.listdir`` and ``os.scandir``
  of anything under ``/proc`` raise FileNotFoundError (pcmem then asks ``ps``, which is procps here, not BSD's;
  pcmem gives both the same ``-o stat= -p PID`` and ``-o command=``).
- **``os.confstr(_CS_DARWIN_USER_TEMP_DIR)``** (65537) answers a private per-user folder the shim makes:
  ``$PCMEM_EMULATED_DARWIN_TEMP``, else ``/tmp/pcmem-emulated-T-<uid>`` (macOS's is ``/var/folders/…/T/``).

What it cannot emulate: Python still says Linux (``sys.platform``: platformdirs' paths stay XDG's, not
``~/Library``; epoll, not kqueue); native code (DuckDB, onnxruntime) still sees /proc; a real macOS kernel's answers
(only their layout is checked here); APFS's case-insensitive names; a sandboxed app's container; launchd.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import emulation  # noqa: E402

sys.path.pop(0)

emulation.tell_pcmem("macos")

_SO_PEERCRED = socket.SO_PEERCRED
emulation.remove(socket, ("SO_PEERCRED",))
_PATH_LIMIT = 104
_XUCRED = struct.Struct("=IIh2x16I")


def _too_long(address: Any) -> bool:
    return isinstance(address, (str, bytes, os.PathLike)) and len(os.fsencode(address)) > _PATH_LIMIT


class _MacSocket(socket.socket):
    def bind(self, address: Any, /) -> None:
        if self.family == socket.AF_UNIX and _too_long(address):
            raise OSError("AF_UNIX path too long")
        super().bind(address)

    def connect(self, address: Any, /) -> None:
        if self.family == socket.AF_UNIX and _too_long(address):
            raise OSError("AF_UNIX path too long")
        super().connect(address)

    def connect_ex(self, address: Any, /) -> int:
        if self.family == socket.AF_UNIX and _too_long(address):
            raise OSError("AF_UNIX path too long")
        return super().connect_ex(address)

    def getsockopt(self, level: int, option: int, *size: int) -> Any:
        if self.family != socket.AF_UNIX or level != 0:
            return super().getsockopt(level, option, *size)
        pid, uid, gid = struct.unpack("3i", super().getsockopt(socket.SOL_SOCKET, _SO_PEERCRED, 12))
        if option == 1:  # LOCAL_PEERCRED
            answer = _XUCRED.pack(0, uid, 1, gid, *([0] * 15))
        elif option == 2:  # LOCAL_PEERPID
            answer = struct.pack("=i", pid)
        else:
            raise OSError(errno.ENOPROTOOPT, "Protocol not available")
        return answer[: size[0]] if size else struct.unpack_from("=i", answer)[0]


socket.socket = _MacSocket  # type: ignore[misc]

try:
    import fcntl
except ImportError:
    pass
else:
    _fcntl = fcntl.fcntl

    def _mac_fcntl(descriptor: Any, command: int, argument: Any = 0, /) -> Any:
        if command != fcntl.F_GETLK or not isinstance(argument, bytes):
            return _fcntl(descriptor, command, argument)
        start, length, pid, kind, whence = struct.unpack("qqihh", argument)
        answer = _fcntl(descriptor, command, struct.pack("hhqqi", kind, whence, start, length, pid))
        kind, whence, start, length, pid = struct.unpack("hhqqi", answer)
        return struct.pack("qqihh", start, length, pid, kind, whence)

    fcntl.fcntl = _mac_fcntl


def _under_proc(path: Any) -> bool:
    try:
        text = os.fsdecode(path)
    except TypeError:
        return False  # a descriptor
    return text == "/proc" or text.startswith("/proc/")


def _without_proc(original: Any) -> Any:
    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        if _under_proc(path):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory (no /proc on macOS: platform shim)",
                                    os.fsdecode(path))
        return original(path, *args, **kwargs)

    return call


builtins.open = io.open = _without_proc(io.open)
for _name in ("open", "stat", "lstat", "listdir", "scandir"):
    setattr(os, _name, _without_proc(getattr(os, _name)))

_confstr = os.confstr


def _mac_confstr(name: int | str) -> str | None:
    if name not in (65537, "CS_DARWIN_USER_TEMP_DIR"):
        return _confstr(name)
    folder = os.environ.get("PCMEM_EMULATED_DARWIN_TEMP") or f"/tmp/pcmem-emulated-T-{os.getuid()}"
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder.rstrip("/") + "/"


os.confstr = _mac_confstr
