"""The store file on disk, before DuckDB sees it: what the path may be, who may read and write it, and the modes it
and its log are created with. Whether a leftover log belongs to the file and replays whole is :mod:`.wal`; who holds
the file's lock is :mod:`.lock_probe`.

Everything here looks at the file system only, so a refusal leaves the file (and the folder) exactly as it was.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from pcmem import private_files, system
from pcmem.errors import (
    InputError,
    StoreError,
    StoreFormatError,
    StoreMissingError,
    StorePermissionError,
    StoreReadOnlyError,
    StoreWALError,
)
from pcmem.settings import expand_user, store_scheme

NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX: open a FIFO without waiting for its other end
# No O_CLOEXEC in pcmem's os.open calls: Python makes every descriptor non-inheritable already (PEP 446), and
# Windows has no such flag (#41).

FILE_MODE = private_files.FILE_MODE


def store_path(target: str | os.PathLike[str]) -> Path:
    """The store file a target names, resolved once: absolute, ``~`` expanded, every symlink followed.

    Everything about a store — the file DuckDB opens, its log ``FILE.wal`` (DuckDB puts it next to the file it
    opens), the log guard, the lock probe, the registry's key — uses this one path: a store reached through a
    symlink once had its log prepared and checked next to the link while DuckDB wrote it next to the target.
    Handing DuckDB an absolute path also keeps a relative name with a colon (``./notes:v2.duckdb``) a file name.
    """
    text = os.fspath(target)
    if not isinstance(text, str):
        raise InputError(f"a store path is text, not {type(text).__name__}")
    if not text.strip():
        raise InputError("the store path is empty")
    if "\x00" in text:
        raise InputError("the store path contains a NUL character")
    return Path(os.path.realpath(expand_user(local_path_text(text))))


def local_path_text(target: str) -> str:
    """The file path a DuckDB target names: itself, or what follows ``duckdb:`` (``duckdb:notes.duckdb``,
    ``duckdb:///abs/notes.duckdb``). DuckDB reads a scheme-like prefix as a scheme or an extension to load (``md:``,
    ``s3:``; ``notes:v2.duckdb`` asked for a ``notes`` extension), and ``:memory:`` as no file at all: pcmem refuses
    them rather than guess (a file whose name has a colon is written ``./notes:v2.duckdb``)."""
    if store_scheme(target) == "duckdb:":
        target = target[len("duckdb:"):]
        if target.startswith("//"):
            from urllib.parse import unquote, urlsplit

            parts = urlsplit("duckdb:" + target)
            if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
                raise InputError(f"'duckdb:{target}' names a host or options; a DuckDB store is a local file: "
                                 "duckdb:///abs/path or duckdb:relative/path")
            target = unquote(parts.path)
        if not target.strip():
            raise InputError("'duckdb:' names no file: give duckdb:PATH or the plain path")
    if target.startswith(":memory:"):
        raise InputError("':memory:' is not a store file: pcmem keeps memory in a file (use a temporary file for a "
                         "throwaway store)")
    if store_scheme(target) is not None or "://" in target:
        raise InputError(f"{target!r} is a URL, not a local file path (a file whose name has a colon is written "
                         "./NAME)")
    return target


def wal_path(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of an existing file, else None: what makes two names — hard links, bind mounts, two
    spellings on a case-insensitive file system — one file."""
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def check_path(path: Path, *, create: bool) -> bool:
    """Refuse paths that cannot be a store file; return whether the file exists. Creates nothing."""
    try:
        info = path.stat()
    except FileNotFoundError:
        info = None
    except PermissionError as error:
        raise StorePermissionError(f"permission denied reading {path.parent}: {error.strerror}") from None
    except OSError as error:
        if error.errno == errno.ENOTDIR:
            raise StoreMissingError(f"no store at {path}: a part of the path is a file, not a folder") from None
        raise StoreError(f"cannot use {path}: {error.strerror}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise StoreError(f"{path} is a directory, not a store file")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path} is not a regular file (a pipe, socket or device); a store is a regular file")
        _check_header(path, info.st_size)
        return True
    if not create:
        raise StoreMissingError(f"no store at {path} (read commands never create one; `pcmem init` does)")
    if not _nearest_existing(path.parent).is_dir():
        raise StoreMissingError(f"cannot create {path}: a part of its folder path is a file")
    return False


def _nearest_existing(folder: Path) -> Path:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _check_header(path: Path, size: int) -> None:
    """DuckDB writes ``DUCK`` at byte 8 of every database file; anything else is not ours to open."""
    if size == 0:
        return
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
    except PermissionError:
        raise StorePermissionError(f"permission denied reading {path}") from None
    if len(head) < 12 or head[8:12] != b"DUCK":
        raise StoreFormatError(f"{path} is not a DuckDB database file (pcmem leaves it untouched)")


def os_error(error: OSError, doing: str) -> StoreError:
    """The typed error for a failed file-system call: a read-only file system, a denied permission, or the system's
    own words for anything else."""
    if error.errno == errno.EROFS:
        return StoreReadOnlyError(f"cannot {doing}: read-only file system")
    if error.errno in (errno.EACCES, errno.EPERM):
        return StorePermissionError(f"permission denied: cannot {doing}")
    return StoreError(f"cannot {doing}: {error.strerror or error}")


def make_private_folders(folder: Path) -> None:
    """Create ``folder`` and every missing parent with mode 0700 (see :mod:`pcmem.private_files`)."""
    try:
        private_files.make_private_folders(folder)
    except OSError as error:
        raise os_error(error, f"create the folder {error.filename or folder}") from None


def create_store_file(path: Path, build: Callable[[Path], None]) -> bool:
    """Create the store file ``path`` with ``build`` (DuckDB's creation of an empty database) owner-only from its
    first instant: DuckDB creates a file with the umask's mode, and a chmod afterwards leaves a handle another user
    opened in between readable — and writable under umask 000 — for good (see :func:`pcmem.private_files.
    create_privately`). Returns False when another process created the file first (then it is theirs, and the
    caller opens it like any existing store)."""
    try:
        return private_files.create_privately(path, build)
    except OSError as error:
        raise os_error(error, f"create {path}") from None


def make_owner_only(path: Path) -> None:
    """Make a store pcmem initialises — a new file, or an empty one another tool made (0644) — and its log private
    before any entry is written into them."""
    for private in (path, wal_path(path)):
        try:
            os.chmod(private, FILE_MODE)
        except FileNotFoundError:
            pass
        except OSError as error:
            raise os_error(error, f"make {private} owner-only (pcmem keeps memory private)") from None


def prepare_wal(path: Path) -> None:
    """Create the store's log owner-only before DuckDB does (DuckDB creates ``FILE.wal`` with the umask's mode, 0644,
    and keeps the mode of one it finds), leaving an existing log alone. A log that is not a regular file is refused
    (opened non-blocking: a FIFO must not hang the process)."""
    wal = wal_path(path)
    try:
        descriptor = os.open(wal, os.O_CREAT | os.O_WRONLY | NONBLOCK | system.BINARY, FILE_MODE)
    except OSError as error:
        if error.errno in (errno.EISDIR, errno.ENXIO):  # a directory; a FIFO nobody reads (or a socket)
            raise not_a_log(path, wal.stat().st_mode) from None
        raise os_error(error, f"create {wal}") from None
    try:
        mode = os.fstat(descriptor).st_mode
    finally:
        os.close(descriptor)
    if not stat.S_ISREG(mode):
        raise not_a_log(path, mode)


def _kind(mode: int) -> str:
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a pipe", stat.S_ISSOCK: "a socket",
             stat.S_ISCHR: "a device", stat.S_ISBLK: "a device"}
    return next((kind for test, kind in kinds.items() if test(mode)), "not a regular file")


def not_a_log(path: Path, mode: int) -> StoreWALError:
    wal = wal_path(path)
    return StoreWALError(f"{wal} is {_kind(mode)}, not a write-ahead log: DuckDB keeps the log of {path} at that "
                         f"name, so pcmem refuses to open the store; move it aside: mv '{wal}' '{wal}.aside'")


def writable(path: Path) -> bool:
    """Whether this process may write the store (the file and its folder, where DuckDB keeps the .wal)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def check_readable(path: Path) -> None:
    if not os.access(path, os.R_OK):
        raise StorePermissionError(f"permission denied: cannot read {path}")


def refuse_write(path: Path) -> None:
    raise StoreReadOnlyError(f"{path} is read-only (file or folder not writable): reads work, writes are refused")


def remove_store_files(path: Path) -> None:
    """Remove a store file this process just created (and its log), after its creation failed. Best effort: on a
    read-only file system even a missing file answers EROFS, and the error that made us clean up is the one to raise."""
    for leftover in (path, wal_path(path)):
        try:
            leftover.unlink()
        except OSError:
            pass
