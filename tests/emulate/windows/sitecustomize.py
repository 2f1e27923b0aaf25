"""Windows, as far as Linux can play it: run pcmem with ``PYTHONPATH=tests/emulate/windows`` (issue #41).

What this emulates, at interpreter start:

- **The names Windows' CPython lacks are gone**: ``os.getuid``, ``geteuid``, ``getgid``, ``getegid``, ``getgroups``,
  ``fchown``, ``lchown``, ``fchmod`` (3.11/3.12), ``killpg``, ``getpgid``, ``setsid``, ``fork``, ``sync``; the flags
  ``os.O_CLOEXEC``, ``O_NOFOLLOW``, ``O_DIRECTORY``, ``O_NONBLOCK``, ``O_NOCTTY``, ``O_PATH``; ``socket.AF_UNIX`` and
  ``SO_PEERCRED`` (cpython#77589: no AF_UNIX on Windows); ``signal.SIGHUP``, ``SIGTSTP``, ``SIGCONT``, ``SIGSTOP``,
  ``SIGQUIT``, ``SIGUSR1``, ``SIGUSR2``, ``SIGALRM``, ``SIGTTIN``, ``SIGTTOU``.
- **Modules Windows has not fail to import**: ``fcntl``, ``pwd``, ``grp``, ``termios``, ``tty``, ``pty``,
  ``resource``.
- **pcmem is told it runs on Windows** (``pcmem.system.KIND == "windows"``): its own choices between systems take
  Windows' branch (no mode checks, no ``os.kill(pid, 0)``, the pipe transport, no process states).
- **The user's folders need no environment**: Windows' platformdirs asks the system's known folders, so a process
  started with ``env -i`` finds the same ones; Linux's platformdirs (which runs here) reads ``$HOME``, so the shim
  sets ``HOME`` from the password database where it is missing (before ``pwd`` goes).
- **asyncio's ``loop.add_signal_handler`` raises NotImplementedError**, as Windows' event loops do.
- **``socket.socketpair()`` is a pair of loopback TCP sockets**, as CPython builds it on Windows (asyncio's event
  loop wakes itself through one).
- **``os.kill(pid, 0)`` ends the process with a message** (exit 86): on Windows it would send Ctrl-C to process group
  ``pid`` (signal 0 is ``CTRL_C_EVENT`` there), never "is it alive?".
- **Windows' descriptors**: ``os.O_BINARY`` exists (0x8000, taken off before the real call), and an ``os.open`` of a
  file by pcmem's own code without it ends the process with a message (exit 87: on Windows the descriptor would be
  in text mode, turning ``\n`` into ``\r\n`` and stopping reads at Ctrl-Z); ``os.open`` of a folder raises
  PermissionError; ``os.fsync`` of a descriptor opened read-only raises EBADF (``FlushFileBuffers`` needs write
  access); ``os.pread``/``os.pwrite`` are gone; ``shutil.rmtree`` walks by path, as Windows' does (no ``dir_fd``
  there: the descriptor-based walk would open folders).

What it cannot emulate (so nothing here claims it works on Windows):

- Python still says Linux (``sys.platform``, ``os.name``): libraries that pick an implementation by it run their
  Linux one — platformdirs' paths (imported here first, as its Linux module reads ``os.getuid`` at import), the MCP
  SDK's stdio (which imports ``fcntl`` on Linux: allowed while it loads), Textual's Linux terminal driver (loaded,
  with ``termios`` allowed while it loads, as an app picks its driver class: the TUI runs on Textual's headless
  driver here, never on a terminal), asyncio's selector loop.
- The named pipe itself: ``AF_PIPE`` needs ``_winapi``. With ``AF_UNIX`` gone too, no owner transport can listen
  under this shim, so each process uses a store alone and a second one waits, then gets StoreLockedError (the pipe
  transport runs on Linux without the shim: tests/owner/test_owner_transports.py). With ``PCMEM_EMULATED_PIPE=unix`` a
  Unix socket stands in for the named pipe beneath ``multiprocessing.connection`` (its ``Listener`` and ``Client``
  get ``AF_UNIX``, pcmem's code still sees none, and :func:`pcmem.owner.pipes.family` answers ``AF_UNIX`` in place
  of ``AF_PIPE``), so processes under this shim share a store through pcmem's pipe transport — its key in
  platformdirs' data folder (Linux's here), its challenge, Windows' branches around it — but not through a pipe.
- Windows' files: DuckDB's POSIX lock instead of an exclusive open, deleting or renaming a file that is open, drive
  letters and backslashes, case-insensitive names, ACLs instead of modes, the console's code page and Ctrl-Break.
"""

from __future__ import annotations

import asyncio.unix_events
import errno
import fcntl
import os
import pwd
import shutil
import signal
import socket
import stat
import sys
import types
from pathlib import Path
from typing import Any

import platformdirs.unix  # noqa: F401 - imported while os.getuid exists (see the docstring)

os.environ.setdefault("HOME", pwd.getpwuid(os.getuid()).pw_dir)  # Windows' known folders need no environment

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import emulation  # noqa: E402

sys.path.pop(0)

emulation.tell_pcmem("windows")
emulation.remove(os, ("getuid", "geteuid", "getgid", "getegid", "getgroups", "fchown", "lchown", "fchmod", "killpg",
                      "getpgid", "setsid", "fork", "sync", "pread", "pwrite", "O_CLOEXEC", "O_NOFOLLOW", "O_DIRECTORY",
                      "O_NONBLOCK", "O_NOCTTY", "O_PATH"))
if os.environ.get("PCMEM_EMULATED_PIPE") == "unix":
    import multiprocessing.connection  # while AF_UNIX exists: its list of families keeps it

    class _SocketWithUnix(types.ModuleType):
        """The socket module as multiprocessing.connection sees it: AF_UNIX stays (the named pipe's stand-in)."""

        AF_UNIX = socket.AF_UNIX

        def __getattr__(self, name: str) -> Any:
            return getattr(socket, name)

    multiprocessing.connection.socket = _SocketWithUnix("socket")  # type: ignore[attr-defined]
    emulation.after_import("pcmem.owner.pipes", lambda module: setattr(module, "family", lambda: "AF_UNIX"))
emulation.remove(socket, ("AF_UNIX", "SO_PEERCRED"))
emulation.remove(signal, ("SIGHUP", "SIGTSTP", "SIGCONT", "SIGSTOP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM",
                          "SIGTTIN", "SIGTTOU"))
emulation.unimportable(("fcntl", "pwd", "grp", "termios", "tty", "pty", "resource"),
                       linux_branches={"mcp.server.stdio": ("fcntl",),
                                       "textual.drivers.linux_driver": ("termios", "tty")})


def _no_signal_handlers(self: object, *args: object) -> None:
    raise NotImplementedError("Windows' event loops have no add_signal_handler (platform shim)")


asyncio.unix_events._UnixSelectorEventLoop.add_signal_handler = _no_signal_handlers  # type: ignore[method-assign]
asyncio.unix_events._UnixSelectorEventLoop.remove_signal_handler = _no_signal_handlers  # type: ignore[method-assign]



def _loopback_socketpair(family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM,
                         proto: int = 0) -> tuple[socket.socket, socket.socket]:
    """CPython's socketpair where the system has none (Windows): a listener on 127.0.0.1, connected to itself."""
    with socket.socket(family, kind, proto) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        one = socket.socket(family, kind, proto)
        try:
            one.connect(listener.getsockname())
            other, _ = listener.accept()
        except BaseException:
            one.close()
            raise
    return one, other


socket.socketpair = _loopback_socketpair
_kill = os.kill


def _windows_kill(pid: int, number: int) -> None:
    if number == 0:
        sys.stderr.write(f"platform shim: os.kill({pid}, 0) would send Ctrl-C to process group {pid} on Windows\n")
        sys.stderr.flush()
        os._exit(86)
    _kill(pid, number)


os.kill = _windows_kill

os.O_BINARY = 0x8000  # type: ignore[attr-defined]
_open, _fsync = os.open, os.fsync


def _windows_open(path: object, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    name = os.fsdecode(path)  # type: ignore[arg-type]
    if os.path.isdir(name):
        raise PermissionError(errno.EACCES, "Permission denied (a folder cannot be opened on Windows: platform shim)",
                              name)
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if not flags & os.O_BINARY and name != os.devnull and caller.partition(".")[0] in ("pcmem", "pcmem_tui"):
        sys.stderr.write(f"platform shim: {caller} opened {name} without os.O_BINARY: text mode on Windows\n")
        sys.stderr.flush()
        os._exit(87)
    return _open(path, flags & ~os.O_BINARY, mode, dir_fd=dir_fd)  # type: ignore[arg-type]


def _windows_fsync(descriptor: int | object) -> None:
    number = descriptor if isinstance(descriptor, int) else descriptor.fileno()  # type: ignore[attr-defined]
    if fcntl.fcntl(number, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY and stat.S_ISREG(os.fstat(number).st_mode):
        raise OSError(errno.EBADF, "Bad file descriptor (Windows flushes only a descriptor that may write: shim)")
    _fsync(number)


os.open = _windows_open  # type: ignore[assignment]
shutil._use_fd_functions = False  # type: ignore[attr-defined]  # Windows' os functions take no dir_fd
os.fsync = _windows_fsync
