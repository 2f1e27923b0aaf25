"""Every storage block of a DuckDB file read from disk and its checksum verified, as ``pcmem check`` needs it.

DuckDB verifies a block's checksum only when it loads the block, and it loads blocks lazily: a flipped bit in an
index block is found by the first write that walks that index (``Corrupt database file: computed checksum …``),
while every query that reads around it — and any check made of queries — succeeds. Reading the blocks through
DuckDB cannot reach every one either (an index is read only along the keys looked up, and blocks already in the
buffer pool are not read again). So this module reads the file itself: the headers, the list of free blocks, and
every block in use, and recomputes each checksum the way DuckDB 1.5 does (``checksum.cpp``: 5381 XOR, over every
64-bit word of the block after its 8-byte checksum, the word times 0xbf58476d1ce4e5b9).

Layout (``single_file_block_manager.cpp``, ``metadata_reader.cpp``): a 4 KiB main header, two 4 KiB database
headers (the one with the higher iteration is current: its block count, block size and the pointer to the free
list), then blocks of ``block_alloc_size`` bytes, each an 8-byte checksum and its payload. The free list lives in
metadata blocks, which are cut into 64 sub-blocks, each starting with the pointer to the next.
"""

from __future__ import annotations

import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

from pcmem import system

_HEADER = 4096  # Storage::FILE_HEADER_SIZE
_BLOCKS_START = 3 * _HEADER  # main header + two database headers
_CHECKSUM = 8  # bytes before each block's payload (unencrypted files)
_METADATA_PER_BLOCK = 64
_INVALID = 2**64 - 1
_WORD_FACTOR = 0xBF58476D1CE4E5B9
_CHUNK_BLOCKS = 32  # blocks read and verified at once (8 MiB at DuckDB's default 256 KiB blocks)


@dataclass(frozen=True, slots=True)
class BlockScan:
    """What a scan of the file found: ``damaged`` lists the block ids in use whose checksum fails (or that the
    file is too short to hold), ``headers`` the damaged file headers; ``free_list_known`` is False when the list of
    free blocks was unreadable and every block was verified instead."""

    path: Path
    blocks: int
    verified: int
    damaged: tuple[int, ...]
    headers: tuple[str, ...]
    free: tuple[int, ...] = ()  # blocks on the free list: not verified (they hold nothing)
    free_list_known: bool = True

    @property
    def ok(self) -> bool:
        return not self.damaged and not self.headers


def _checksums(payloads: bytes, size: int) -> list[int]:
    """DuckDB's checksum of each ``size``-byte payload in ``payloads`` (several at once: numpy, one pass)."""
    import numpy as np  # lazy: only a check reads the whole file

    words = np.frombuffer(payloads, dtype="<u8").reshape(-1, size // 8)
    with np.errstate(over="ignore"):
        mixed = words * np.uint64(_WORD_FACTOR)
    return [int(value) ^ 5381 for value in np.bitwise_xor.reduce(mixed, axis=1)]


def _sound(chunk: bytes) -> bool:
    (stored,) = struct.unpack_from("<Q", chunk, 0)
    return _checksums(chunk[_CHECKSUM:], len(chunk) - _CHECKSUM)[0] == stored


@dataclass(frozen=True, slots=True)
class _Header:
    iteration: int
    free_list: int
    block_count: int
    block_size: int


def _database_header(chunk: bytes) -> _Header:
    iteration, _meta, free_list, count, alloc = struct.unpack_from("<5Q", chunk, _CHECKSUM)
    return _Header(iteration, free_list, count, alloc)


def scan(path: Path) -> BlockScan:
    """Verify the headers and every block in use of the DuckDB file at ``path`` (read-only, O(file)).

    Never while this process has the file open in DuckDB: closing any descriptor of a file drops every POSIX lock
    the process holds on it, DuckDB's too, and another process could then open it beside us. A backend scans
    through the descriptor it keeps until DuckDB has closed the file (:func:`scan_descriptor`)."""
    descriptor = os.open(path, os.O_RDONLY | system.BINARY)
    try:
        return scan_descriptor(descriptor, path)
    finally:
        os.close(descriptor)


def _pread(descriptor: int, count: int, offset: int) -> bytes:
    """``count`` bytes at ``offset``. Windows has no pread: there a seek and a read, one at a time in the process."""
    if hasattr(os, "pread"):
        return os.pread(descriptor, count, offset)
    data = bytearray()
    with _SEEK_AND_READ:
        os.lseek(descriptor, offset, os.SEEK_SET)
        while len(data) < count:
            chunk = os.read(descriptor, count - len(data))
            if not chunk:
                break
            data += chunk
    return bytes(data)


_SEEK_AND_READ = threading.Lock()


def scan_descriptor(descriptor: int, path: Path) -> BlockScan:
    """:func:`scan` through an open descriptor of the file (read with pread: no shared file position)."""
    names = ("the main header", "database header 1", "database header 2")
    head = _pread(descriptor, _BLOCKS_START, 0)
    if len(head) < _BLOCKS_START:
        return BlockScan(path, 0, 0, (), ("the file headers (the file is shorter than them)",))
    parts = [head[n * _HEADER:(n + 1) * _HEADER] for n in range(3)]
    damaged_headers = tuple(name for name, part in zip(names, parts, strict=True) if not _sound(part))
    current = [_database_header(part) for name, part in zip(names[1:], parts[1:], strict=True)
               if name not in damaged_headers]
    if names[0] in damaged_headers or not current:
        return BlockScan(path, 0, 0, (), damaged_headers)
    header = max(current, key=lambda h: h.iteration)
    if header.block_size < 4096 or header.block_size % 4096:
        return BlockScan(path, 0, 0, (), (f"the database header (block size {header.block_size})",))
    reader = _BlockReader(descriptor, header.block_size, header.block_count)
    free, known = _free_blocks(reader, header)
    damaged = [block for block in range(header.block_count) if block not in free and not reader.sound(block)]
    return BlockScan(path, header.block_count, header.block_count - len(free), tuple(damaged), damaged_headers,
                     free=tuple(sorted(free)), free_list_known=known)


class _BlockReader:
    """Blocks by id, read in chunks and verified once each."""

    def __init__(self, descriptor: int, block_size: int, block_count: int) -> None:
        self._descriptor, self.block_size, self._count = descriptor, block_size, block_count
        self._verdicts: dict[int, bool] = {}

    def read(self, block: int) -> bytes | None:
        """The block's bytes when it exists and its checksum holds, else None."""
        if not 0 <= block < self._count or not self.sound(block):
            return None
        return _pread(self._descriptor, self.block_size, _BLOCKS_START + block * self.block_size)

    def sound(self, block: int) -> bool:
        if block not in self._verdicts:
            self._verify_chunk(block - block % _CHUNK_BLOCKS)
        return self._verdicts[block]

    def _verify_chunk(self, first: int) -> None:
        count = min(_CHUNK_BLOCKS, self._count - first)
        data = _pread(self._descriptor, count * self.block_size, _BLOCKS_START + first * self.block_size)
        whole = len(data) // self.block_size
        if whole:
            size = self.block_size - _CHECKSUM
            blocks = [data[n * self.block_size:(n + 1) * self.block_size] for n in range(whole)]
            computed = _checksums(b"".join(block[_CHECKSUM:] for block in blocks), size)
            for n, block in enumerate(blocks):
                self._verdicts[first + n] = struct.unpack_from("<Q", block, 0)[0] == computed[n]
        for n in range(whole, count):  # the file ends before these blocks: they are lost
            self._verdicts[first + n] = False


def _free_blocks(reader: _BlockReader, header: _Header) -> tuple[set[int], bool]:
    """The ids of the blocks on the file's free list, and whether the list could be read (when it cannot, every
    block is verified: a free block holds an old block, written whole with its checksum)."""
    if header.free_list == _INVALID:
        return set(), True
    sub_size = ((reader.block_size - _CHECKSUM) // _METADATA_PER_BLOCK) // 8 * 8
    data = bytearray()
    pointer = header.free_list
    needed: int | None = None
    seen = set()
    while True:
        block, index = pointer & ((1 << 56) - 1), pointer >> 56
        raw = reader.read(block)
        if raw is None or index >= _METADATA_PER_BLOCK or pointer in seen:
            return set(), False
        seen.add(pointer)
        sub = raw[_CHECKSUM + index * sub_size:_CHECKSUM + (index + 1) * sub_size]
        (pointer,) = struct.unpack_from("<Q", sub, 0)
        data += sub[8:]
        if needed is None and len(data) >= 8:
            needed = 8 + 8 * struct.unpack_from("<Q", data, 0)[0]
        if needed is not None and len(data) >= needed:
            break
        if pointer == _INVALID:
            return set(), False
    count = struct.unpack_from("<Q", data, 0)[0]
    free = set(struct.unpack_from(f"<{count}q", data, 8))
    if any(not 0 <= block < header.block_count for block in free):
        return set(), False
    return free, True
