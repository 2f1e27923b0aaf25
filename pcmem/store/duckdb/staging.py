"""A DuckDB store file that ``pcmem migrate`` writes under a temporary name and renames into place once complete.

A copy interrupted half-way (a kill, a crash, a full disk) must not leave a file that looks like a store: it opens,
``check`` finds nothing wrong with the part it holds, and a rerun only says the destination is not empty. So the copy
is written to ``NEW.migrate-partial`` next to ``NEW`` and renamed to ``NEW`` only when it is complete, verified and
closed (a rename within one folder is atomic). An existing (empty) destination is copied to the partial name first,
so it too is replaced in one step or not at all. The next run removes a partial copy nobody is writing.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pcmem import private_files
from pcmem.errors import InputError, StoreError, StoreLockedError
from pcmem.store import held
from pcmem.store.duckdb import files, lock_probe
from pcmem.store.engine import StoreLocation

PARTIAL_SUFFIX = ".migrate-partial"


@dataclass(frozen=True, slots=True)
class StagedFile:
    """Where a copy is written (``partial``) and where it goes when it is complete (``final``): a
    :class:`~pcmem.store.engine.StagedCopy`."""

    final: Path
    partial: StoreLocation
    replaces: tuple[int, int, int] | None  # (inode, size, mtime) of the existing destination it was copied from
    removed_leftover: bool  # a partial copy left by an interrupted run was removed

    def publish(self) -> None:
        publish(self)

    def discard(self) -> None:
        discard(self)


def stage(final: Path) -> StagedFile:
    """Prepare the partial copy of the store file ``final`` (resolved). Refuses while another process writes a
    partial copy of the same destination, or holds the destination."""
    partial = final.with_name(final.name + PARTIAL_SUFFIX)
    removed = _remove_leftover(partial)
    location = StoreLocation("duckdb", str(partial), partial, target=str(partial))
    if not final.exists():
        if files.wal_path(final).exists():
            raise InputError(f"{files.wal_path(final)} is a write-ahead log without its store file; DuckDB would "
                             f"replay it into the copy: move it aside or choose another destination")
        return StagedFile(final, location, None, removed)
    # Asking the system who holds it would open and close the file: that drops this process's own lock on it.
    if held.holds(files.file_identity(final)):
        raise StoreLockedError(f"{final} is open in this process; close it before copying into it")
    holder = lock_probe.lock_holder(final)
    if holder is not None:
        raise StoreLockedError(f"{final} is in use by {lock_probe.describe_process(holder)}; close it there first")
    replaces = _identity(final)
    for source, copy in ((final, partial), (files.wal_path(final), files.wal_path(partial))):
        if source.exists():  # the copy is owner-only from its first byte, and never a file someone else made
            descriptor = private_files.open_private(copy, os.O_WRONLY)
            with os.fdopen(descriptor, "wb") as out, open(source, "rb") as original:
                shutil.copyfileobj(original, out)
    return StagedFile(final, location, replaces, removed)


def publish(staged: StagedFile) -> None:
    """Rename the closed, complete copy to its final name (after a check that nobody made or changed that file
    meanwhile: the copy would silently replace it)."""
    partial = _path(staged)
    if files.wal_path(partial).exists():
        raise StoreError(f"the copy {partial} was not closed cleanly (its write-ahead log remains); "
                         f"{staged.final} was not written")
    now = _identity(staged.final) if staged.final.exists() else None
    if now != staged.replaces:
        raise StoreError(f"{staged.final} was {'changed' if staged.replaces else 'created'} by someone else during "
                         f"the copy; the copy is left at {partial}")
    private_files.fsync_file(partial)
    os.replace(partial, staged.final)
    private_files.fsync_folder(staged.final.parent)


def discard(staged: StagedFile) -> None:
    """Remove the partial copy (and its log) after a failed copy."""
    partial = _path(staged)
    for leftover in (partial, files.wal_path(partial)):
        try:
            leftover.unlink()
        except FileNotFoundError:
            pass


def _path(staged: StagedFile) -> Path:
    assert staged.partial.path is not None  # made by stage(): a file
    return staged.partial.path


def _remove_leftover(partial: Path) -> bool:
    if not partial.exists():
        return False
    holder = lock_probe.lock_holder(partial)
    if holder is not None:
        raise StoreLockedError(f"{partial} is being written by {lock_probe.describe_process(holder)} (another migrate "
                               "to the same destination?); wait for it to finish")
    for leftover in (partial, files.wal_path(partial)):
        try:
            leftover.unlink()
        except FileNotFoundError:
            pass
    return True


def _identity(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_ino, info.st_size, info.st_mtime_ns
