"""The store's write-ahead log, read before DuckDB replays it: whether it is this store's log and whether every
transaction in it would replay, and how to keep the complete ones of a damaged log.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from pcmem import system
from pcmem.errors import StoreError, StoreLockedError, StoreWALError
from pcmem.store.duckdb import files, lock_probe

_log = logging.getLogger(__name__)

# DuckDB 1.5 WAL: a version header, serialised without a checksum — field 100 (entry type) = 98 (WAL_VERSION),
# field 101 = version 2, and, for store files in DuckDB's v1.4+ storage format, field 102 = the database file's
# 16-byte identifier and field 103 = the file's checkpoint iteration; then the end marker 0xFFFF. Field ids are
# little-endian u16, numbers LEB128 varints. Entries follow: [u64 payload size][u64 checksum][payload]; each
# committed transaction ends with a FLUSH entry (payload field 100 = 100). DuckDB replays the longest readable prefix
# and drops the rest without a word, so pcmem reads the log first: a damaged header is refused; entries after the
# last FLUSH (or one cut short) are a transaction whose COMMIT never finished, set aside in a copy
# (prepare_leftover_wal).
#
# Whose log it is: DuckDB 1.5.5 writes the identifier and iteration only for files in the v1.4+ format (header
# version number > 66) and, replaying, refuses a log whose identifier differs ("WAL does not match database file")
# or whose iteration is not the file's (or one behind, for a checkpoint that finished before the log was removed).
# A log without them is replayed into any file: another database's log next to a pcmem store was merged into it.
# pcmem creates stores in the v1.5 format (connection.NEW_STORE_STORAGE) and, before DuckDB opens the file, refuses
# a log that does not carry the store's identifier (naming the log, not the store). Stores made in the v1.0 format
# (by earlier pcmem versions, or adopted from another tool) have no identifier: their logs cannot be told apart
# (``pcmem migrate`` to a new file gives a store the binding).

_WAL_VERSION_ENTRY = bytes.fromhex("640062")  # field 100 = 98 (WAL_VERSION)
_FLUSH_PAYLOAD = bytes.fromhex("640064ffff")  # field 100 (entry type) = 100 (FLUSH), end marker
_END = b"\xff\xff"
_WAL_VERSION = 2  # 1: before checksums, 3: encrypted; pcmem writes neither
_IDENTIFIER_LENGTH = 16
_BINDING_STORAGE_VERSION = 67  # DuckDB writes the identifier into logs of files from this header version on
_MAIN_HEADER_SIZE = 140  # checksum 8, "DUCK" 4, version 8, flags 32, versions 2 x 32, encryption metadata 8, id 16
_DATABASE_HEADERS = (4096, 8192)  # each: checksum 8, then the checkpoint iteration (u64)


@dataclass(frozen=True, slots=True)
class WALHeader:
    """The version entry at the start of a log: its length and, when present, which file and checkpoint it is for."""

    length: int
    db_identifier: bytes | None
    checkpoint_iteration: int | None


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while position < len(data) and shift < 64:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    raise ValueError("truncated number")


def read_wal_header(data: bytes) -> WALHeader | None:
    """The log's version header, or None when it is not a DuckDB 1.5 log header (damaged, or another version)."""
    try:
        if not data.startswith(_WAL_VERSION_ENTRY) or data[3:5] != b"\x65\x00":
            return None
        version, position = _varint(data, 5)
        if version != _WAL_VERSION:
            return None
        identifier = iteration = None
        if data[position:position + 2] == b"\x66\x00":
            count, position = _varint(data, position + 2)
            if count != _IDENTIFIER_LENGTH:
                return None
            elements = []
            for _ in range(count):
                element, position = _varint(data, position)
                elements.append(element)
            identifier = bytes(elements)
        if data[position:position + 2] == b"\x67\x00":
            iteration, position = _varint(data, position + 2)
        if data[position:position + 2] != _END:
            return None
    except ValueError:
        return None
    return WALHeader(position + 2, identifier, iteration)


@dataclass(frozen=True, slots=True)
class WALScan:
    """What a leftover log holds: the bytes and count of its complete transactions, and why the rest is unreadable."""

    size: int
    committed_bytes: int  # the header plus every complete transaction: exactly what DuckDB replays
    transactions: int
    problem: str | None  # None: the whole log replays
    header: WALHeader | None  # None: the header is damaged

    @property
    def header_ok(self) -> bool:
        return self.header is not None


def scan_wal(data: bytes) -> WALScan:
    header = read_wal_header(data)
    if header is None:
        return WALScan(len(data), 0, 0, "its header is damaged", header=None)
    position = committed = header.length
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
    return WALScan(len(data), committed, transactions, problem, header=header)


def _read_wal(path: Path) -> bytes | None:
    """The leftover log's bytes (None: no log). Opened non-blocking and checked to be a regular file before reading:
    reading a FIFO at that name hung every command, a directory raised a traceback."""
    wal = files.wal_path(path)
    try:
        descriptor = os.open(wal, os.O_RDONLY | files.NONBLOCK | system.BINARY)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket
            raise files.not_a_log(path, wal.stat().st_mode) from None
        raise files.os_error(error, f"read {wal}") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise files.not_a_log(path, mode)
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read()


@dataclass(frozen=True, slots=True)
class StoreHeader:
    """What a DuckDB database file says about itself in its first 12 KiB."""

    storage_version: int
    db_identifier: bytes  # zeros before the v1.4 format
    checkpoint_iteration: int  # of the newer of the two database headers, the one DuckDB uses

    @property
    def binds_its_log(self) -> bool:
        return self.storage_version >= _BINDING_STORAGE_VERSION


def read_store_header(path: Path) -> StoreHeader | None:
    """The file's header, or None when there is no initialised database file yet (missing, empty or too short)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_DATABASE_HEADERS[-1] + 16)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise files.os_error(error, f"read {path}") from None
    if len(head) < _DATABASE_HEADERS[-1] + 16 or head[8:12] != b"DUCK":
        return None
    (storage_version,) = struct.unpack_from("<Q", head, 12)
    identifier = head[_MAIN_HEADER_SIZE - _IDENTIFIER_LENGTH:_MAIN_HEADER_SIZE]
    iteration = max(struct.unpack_from("<Q", head, offset + 8)[0] for offset in _DATABASE_HEADERS)
    return StoreHeader(storage_version, identifier, iteration)


def _foreign_log(path: Path, header: WALHeader) -> str | None:
    """Why the log cannot be this store's (None: it is, or nothing can tell). See the notes above."""
    store = read_store_header(path)
    if store is None:
        return "there is no store file for it yet (a log of another database, or a store file that was removed)"
    if header.db_identifier is None or header.checkpoint_iteration is None:
        if store.binds_its_log:
            return ("it belongs to another database: it does not carry this store's identifier (every log of this "
                    "store does)")
        return None
    if header.db_identifier != store.db_identifier:
        return "it belongs to another database: its identifier is not this store's"
    if header.checkpoint_iteration + 1 < store.checkpoint_iteration:
        return (f"it was written for an older state of this store (checkpoint {header.checkpoint_iteration}; the "
                f"store file is at checkpoint {store.checkpoint_iteration}), and what it holds is already in the file "
                "or was superseded")
    if header.checkpoint_iteration > store.checkpoint_iteration:
        return (f"it was written for a newer state of this store (checkpoint {header.checkpoint_iteration}) than the "
                f"store file holds (checkpoint {store.checkpoint_iteration}): was the file restored from a backup?")
    return None  # the same checkpoint, or one behind (a checkpoint that ended before the log was removed: DuckDB's)


def prepare_leftover_wal(path: Path, *, read_only: bool = False) -> bool:
    """Before DuckDB opens ``path``: raise StoreWALError when a leftover log is not this store's, has a damaged
    header, or is not a file at all; set aside the end of a log that stops inside a transaction. The message names
    the log and says what to do.

    A log whose header is sound but whose end is not a complete transaction is what a process killed inside a COMMIT
    leaves: DuckDB writes a commit's log in 4 KiB pieces and syncs after the last, so a SIGKILL between two pieces
    leaves whole records of a transaction without its closing FLUSH — a write that was never acknowledged (its
    COMMIT had not returned). Every acknowledged write is in the complete transactions before it. So the log is
    copied whole next to the store (``FILE.wal.damaged``: ``pcmem check`` lists it, ``forget`` erases it), cut back
    to its complete transactions, and the store opens — with a warning, since a log cut short by damage looks the
    same. A read-only store is left untouched and refused instead (``pcmem check --recover-wal`` does the same).

    Returns whether a non-empty log lies next to the store (DuckDB replays it when it opens the file), from the same
    read: the caller needs to know, and looking at the log again could see another file than the one checked."""
    data = _read_wal(path)
    if not data:
        return False
    scan = scan_wal(data)
    wal = files.wal_path(path)
    aside = f"mv '{wal}' '{wal}.aside'"
    foreign = _foreign_log(path, scan.header) if scan.header is not None else None
    if foreign is not None:
        raise StoreWALError(
            f"{wal} (a write-ahead log next to the store) cannot be replayed into {path}: {foreign}. Replaying it "
            f"would write its changes into this store, so pcmem refuses and leaves both files untouched. If it is a "
            f"stray copy, move it aside and open the store again: {aside}"
        )
    if scan.problem is None:
        return True
    if scan.header_ok and not read_only:  # nobody holds the store (the caller looked): the log read above is it
        recovery = _set_aside(wal, data, scan)
        _log.warning(
            "pcmem: %s ended inside a transaction that never committed (%s): a process stopped while committing it, so it "
            "was never acknowledged, or the log was cut short. Replaying the %d complete transaction(s) before it; "
            "the whole log is kept in %s", wal, scan.problem, recovery.kept_transactions, recovery.copy)
        return recovery.kept_transactions > 0
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


def replay_refused(path: Path, reason: str) -> StoreWALError | None:
    """DuckDB refused to replay the leftover log (a log pcmem could not tell apart, e.g. next to a v1.0-format store):
    the typed error naming the log, or None when there is no leftover log to blame."""
    wal = files.wal_path(path)
    try:
        leftover = wal.stat().st_size > 0
    except OSError:
        leftover = False
    if not leftover or "WAL" not in reason:
        return None
    return StoreWALError(
        f"{wal} (a write-ahead log next to the store) cannot be replayed into {path}: DuckDB says: {reason}. It is "
        f"probably another database's log or a stale copy; pcmem leaves both files untouched. Keep a copy, then move "
        f"it aside and open the store again: mv '{wal}' '{wal}.aside'"
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
    wal = files.wal_path(path)
    data = _read_wal(path)
    scan = scan_wal(data) if data else None
    if data is None or scan is None or scan.problem is None:  # absent, empty or sound: nothing to set aside
        return WALRecovery(kept_transactions=scan.transactions if scan else 0, dropped_bytes=0, copy=None)
    holder = lock_probe.lock_holder(path) if path.exists() else None
    if holder is not None:
        raise StoreLockedError(f"{path} is in use by {lock_probe.describe_process(holder)}; close it there before recovering")
    return _set_aside(wal, data, scan)


def _set_aside(wal: Path, data: bytes, scan: WALScan) -> WALRecovery:
    """Copy the log ``data`` (read from ``wal``; ``scan`` of it) whole to a new ``.damaged`` copy, then cut the log
    back to its complete transactions, or remove it when it has none."""
    number = 0
    while (copy := _damaged_copy(wal, number)).exists():
        number += 1
    descriptor = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | system.BINARY, files.FILE_MODE)
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
    """Every copy of the store's log kept next to it: the regular files named ``FILE.wal.`` and anything —
    ``FILE.wal.damaged``, ``.damaged.N`` (made by :func:`recover_wal`), and what a user named a log moved aside by hand
    (``.aside`` as a refusal advises, ``.bak``, ``.damaged-2``…). The one definition both ``pcmem check`` (which lists
    them) and ``forget`` (which erases them: they may hold forgotten text) use. Symlinks and folders are not copies."""
    prefix = files.wal_path(path).name + "."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return sorted(path.parent / name for name in names if name.startswith(prefix) and len(name) > len(prefix)
                  and _regular_file(path.parent / name))


def _regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


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
