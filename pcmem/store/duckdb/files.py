"""The store file on disk, before DuckDB sees it: what the path may be, who may read it, and whether its write-ahead
log can be replayed without losing anything.

Everything here looks at the file system only, so a refusal leaves the file (and the folder) exactly as it was.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from pcmem.errors import (
    InputError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreMissingError,
    StorePermissionError,
    StoreReadOnlyError,
    StoreWALError,
)
from pcmem.settings import refuse_non_local  # noqa: F401  (re-exported for the backend)

try:
    import fcntl
except ImportError:  # Windows: no POSIX locks to ask; connection.connect then treats an I/O error as "held"
    fcntl = None  # type: ignore[assignment]

FILE_MODE = 0o600  # agent memory is private: owner-only files ...
FOLDER_MODE = 0o700  # ... and folders, the intermediate ones too


def wal_path(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


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


def make_private_folders(folder: Path) -> None:
    """Create ``folder`` and every missing parent with mode 0700 (``mkdir(parents=True)`` would give the
    intermediate ones the umask's mode)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        try:
            created.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            pass
        except PermissionError:
            raise StorePermissionError(f"permission denied creating the folder {created}") from None
        os.chmod(created, FOLDER_MODE)  # mkdir's mode is filtered by the umask


def create_private_file(path: Path) -> None:
    """Create an empty owner-only file (DuckDB keeps the mode of a file it finds), leaving an existing one alone."""
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, FILE_MODE)
    except PermissionError:
        raise StorePermissionError(f"permission denied creating {path}") from None
    os.close(descriptor)


def writable(path: Path) -> bool:
    """Whether this process may write the store (the file and its folder, where DuckDB keeps the .wal)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def check_readable(path: Path) -> None:
    if not os.access(path, os.R_OK):
        raise StorePermissionError(f"permission denied: cannot read {path}")


def refuse_write(path: Path) -> None:
    raise StoreReadOnlyError(f"{path} is read-only (file or folder not writable): reads work, writes are refused")


# --- who holds the file --------------------------------------------------------------------------------------------


def lock_holder(path: Path) -> int | None:
    """The pid of another process holding DuckDB's lock on ``path`` (0 when the system does not say), else None.

    Asked with F_GETLK, which neither takes nor releases a lock (so it cannot drop this process's own locks)."""
    if fcntl is None:
        return None
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
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


# --- the write-ahead log -------------------------------------------------------------------------------------------
# DuckDB 1.5 WAL: an 8-byte version header (serialised fields 100 = WAL_VERSION type, 101 = version 2, end marker),
# then entries of [u64 payload size][u64 checksum][payload]; each committed transaction ends with a FLUSH entry
# (payload field 100 = 0x64). DuckDB replays the longest readable prefix and drops the rest without a word, so an
# entry cut short, a damaged header, or entries after the last FLUSH mean writes DuckDB would silently lose.

_WAL_HEADER = bytes.fromhex("6400626500" "02ffff")
_FLUSH_PAYLOAD = bytes.fromhex("640064ffff")  # field 100 (entry type) = 100 (FLUSH), end marker


@dataclass(frozen=True, slots=True)
class WALScan:
    """What a leftover log holds: the bytes and count of its complete transactions, and why the rest is unreadable."""

    size: int
    committed_bytes: int  # the header plus every complete transaction: exactly what DuckDB replays
    transactions: int
    problem: str | None  # None: the whole log replays
    header_ok: bool


def scan_wal(data: bytes) -> WALScan:
    if not data.startswith(_WAL_HEADER):
        return WALScan(len(data), 0, 0, "its header is damaged", header_ok=False)
    position = committed = len(_WAL_HEADER)
    transactions = 0
    problem = None
    while position < len(data):
        if position + 16 > len(data):
            problem = f"it ends in the middle of a record (byte {position} of {len(data)})"
            break
        (size,) = struct.unpack_from("<Q", data, position)
        start = position + 16
        if size > len(data) - start:
            problem = f"a record at byte {position} runs past the end of the file ({len(data)} bytes)"
            break
        if data[start:start + size] == _FLUSH_PAYLOAD:
            committed, transactions = start + size, transactions + 1
        position = start + size
    if problem is None and committed != len(data):
        problem = f"its last {len(data) - committed} bytes are not a complete transaction"
    return WALScan(len(data), committed, transactions, problem, header_ok=True)


def _read_wal(path: Path) -> bytes | None:
    wal = wal_path(path)
    try:
        return wal.read_bytes()
    except FileNotFoundError:
        return None
    except PermissionError:
        raise StorePermissionError(f"permission denied reading {wal}") from None


def refuse_damaged_wal(path: Path) -> None:
    """Raise StoreWALError when a leftover log would be replayed only in part (DuckDB would drop the rest)."""
    data = _read_wal(path)
    scan = scan_wal(data) if data else None
    if scan is None or scan.problem is None:
        return
    wal = wal_path(path)
    if scan.header_ok and scan.transactions:
        keep = (f"It holds {scan.transactions} complete transaction(s) before that point: either a crash interrupted "
                f"a write that was never acknowledged, or the log was damaged. To keep the complete transactions and "
                f"set the rest aside in a copy, run: pcmem --db '{path}' check --recover-wal. ")
    else:
        keep = "Nothing in it can be replayed. "
    raise StoreWALError(
        f"{wal} (the store's write-ahead log, left by a process that did not close the store) cannot be replayed "
        f"completely: {scan.problem}. Opening would silently drop the writes in it, so pcmem refuses. {keep}"
        f"Keep a copy of both files; to open the store without the log, move it aside: mv '{wal}' '{wal}.damaged'"
    )


@dataclass(frozen=True, slots=True)
class WALRecovery:
    """What ``recover_wal`` did: the transactions kept for replay, the bytes set aside, and where the copy is."""

    kept_transactions: int
    dropped_bytes: int
    copy: Path | None  # the whole log as it was, or None when there was nothing to recover


def recover_wal(path: Path) -> WALRecovery:
    """Keep the complete transactions of a damaged leftover log and set the rest aside.

    The log is first copied whole to ``FILE.wal.damaged`` (``.damaged.1``, … if taken), then cut back to its header
    and complete transactions (or removed when none is readable), so the next open replays exactly those. A sound or
    absent log is left alone. Refuses while another process holds the store (it may be writing the log).
    """
    wal = wal_path(path)
    data = _read_wal(path)
    scan = scan_wal(data) if data else None
    if data is None or scan is None or scan.problem is None:  # absent, empty or sound: nothing to set aside
        return WALRecovery(kept_transactions=scan.transactions if scan else 0, dropped_bytes=0, copy=None)
    holder = lock_holder(path) if path.exists() else None
    if holder is not None:
        raise StoreLockedError(f"{path} is in use by {describe_process(holder)}; close it there before recovering")
    number = 0
    while (copy := _damaged_copy(wal, number)).exists():
        number += 1
    descriptor = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if scan.transactions:
        with open(wal, "r+b") as handle:
            handle.truncate(scan.committed_bytes)
            os.fsync(handle.fileno())
    else:
        wal.unlink()
    return WALRecovery(kept_transactions=scan.transactions, dropped_bytes=scan.size - scan.committed_bytes, copy=copy)


def _damaged_copy(wal: Path, number: int) -> Path:
    """``FILE.wal.damaged``, then ``FILE.wal.damaged.1``, … (the name the StoreWALError message tells a user to use)."""
    return wal.with_name(f"{wal.name}.damaged" + (f".{number}" if number else ""))


def damaged_wal_copies(path: Path) -> list[Path]:
    """Every set-aside copy of the store's log next to it (made by :func:`recover_wal` or by hand, as advised)."""
    wal = wal_path(path)
    pattern = re.compile(re.escape(f"{wal.name}.damaged") + r"(\.[0-9]+)?")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return sorted(path.parent / name for name in names if pattern.fullmatch(name))


def erase_damaged_wal_copies(path: Path) -> list[Path]:
    """Overwrite and delete the set-aside copies of the store's log: they may hold the text of entries forgotten since,
    and ``forget`` promises that text is gone from every file pcmem keeps. Returns the copies erased."""
    erased = []
    for copy in damaged_wal_copies(path):
        try:
            with open(copy, "r+b") as handle:
                size = os.fstat(handle.fileno()).st_size
                for start in range(0, size, 1 << 20):
                    handle.write(os.urandom(min(1 << 20, size - start)))
                handle.flush()
                os.fsync(handle.fileno())
            copy.unlink()
        except FileNotFoundError:
            continue
        except OSError as error:
            raise StoreError(f"the entry is erased from the store, but {copy} (a set-aside copy of its write-ahead "
                             f"log, which may hold the text) could not be erased: {error.strerror}; delete it") from None
        erased.append(copy)
    return erased
