"""``pcmem doctor``: the store — its file, its folder, a leftover log, and its health in one line.

Light by default: the health line comes from a read-only look (pcmem's migrations, the counts, which derived
structures exist: the cheap part of ``pcmem check``), or from the owner when one serves the store; nothing is
migrated, replayed or created. ``--deep`` runs the whole ``pcmem check`` (every block, every projection).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcmem import system
from pcmem.cli.doctor_findings import Finding, fail, info, ok, warn
from pcmem.errors import PcmemError

if TYPE_CHECKING:
    from pcmem.store.engine import StorageEngine, StoreLocation
    from pcmem.types.embedding import EmbeddingProfile


@dataclass
class StoreFacts:
    """What the store checks learnt that later checks use."""

    engine: StorageEngine | None = None  # the store's engine (None: an unusable target)
    location: StoreLocation | None = None
    path: Path | None = None  # the store file (None: not a single-file store, or an unusable target)
    exists: bool = False
    holder: int | None = None  # the process holding the file
    profile: EmbeddingProfile | None = None  # the embedding profile of its vectors, when read


def locate(target: Path | str) -> tuple[StoreFacts, Finding]:
    """What ``target`` names, and the finding saying which store this is (doctor looks into store files)."""
    from pcmem.store import engines

    try:
        engine, location = engines.located(target)
    except PcmemError as refused:
        return StoreFacts(), fail("store", f"store {target}: {refused}", "give --db (or $PCMEM_DB) a store file path")
    if not engine.single_file:
        return StoreFacts(engine, location), info(
            "store", f"store {location}: a {engine.name} database (doctor checks store files)")
    return StoreFacts(engine, location, location.path), ok("store", f"store {location}", path=str(location.path))


def file_findings(path: Path, facts: StoreFacts) -> list[Finding]:
    try:
        info_ = os.stat(path)
    except FileNotFoundError:
        return [warn("store.file", f"no store at {path} yet", "the first write creates it (`pcmem init`); if you "
                     "expected one here, check --db / $PCMEM_DB (`pcmem where`)", exists=False),
                _folder_finding(path, exists=False)]
    except OSError as error:
        return [fail("store.file", f"cannot look at {path}: {error.strerror}", None, exists=None)]
    facts.exists = True
    if not stat.S_ISREG(info_.st_mode):
        return [fail("store.file", f"{path} is not a regular file", "point --db at the store file", exists=True)]
    mode, mine = stat.S_IMODE(info_.st_mode), info_.st_uid == _my_uid(info_.st_uid)
    data: dict[str, Any] = {"exists": True, "mode": f"{mode:04o}", "uid": info_.st_uid, "bytes": info_.st_size}
    if not os.access(path, os.R_OK):
        found = fail("store.file", f"{path} cannot be read by you (mode {mode:04o}, uid {info_.st_uid})",
                     f"ask its owner, or `chmod u+r {path}` if it is yours", **data)
    elif not system.file_modes_meaningful():  # Windows: "files.modes" says why in one line
        found = ok("store.file", f"{path}: {_size(info_.st_size)}", **data)
    elif not mine:
        found = warn("store.file", f"{path} belongs to uid {info_.st_uid}, not to you", None, **data)
    elif mode & 0o077:
        found = warn("store.file", f"{path} can be read by others (mode {mode:04o}): it holds every entry's text",
                     f"chmod 600 '{path}'", **data)
    else:
        found = ok("store.file", f"{path}: {_size(info_.st_size)}, mode {mode:04o}, yours", **data)
    return [found, _folder_finding(path, exists=True)]


def _folder_finding(path: Path, *, exists: bool) -> Finding:
    folder = path.parent
    if not exists:
        nearest = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if nearest is not None and os.access(nearest, os.W_OK | os.X_OK):
            return ok("store.folder", f"{nearest} is writable: the store can be created", folder=str(folder))
        return fail("store.folder", f"the store cannot be created: {nearest} is not writable",
                    "choose a store path in a folder you can write (--db / $PCMEM_DB)", folder=str(folder))
    if os.access(folder, os.W_OK | os.X_OK) and os.access(path, os.W_OK):
        return ok("store.folder", f"{folder} is writable", folder=str(folder), writable=True)
    return warn("store.folder", f"the store is read-only here ({folder} or the file is not writable): reads work, "
                "writes are refused (exit 12)", f"make {folder} and the file writable, or copy the store elsewhere",
                folder=str(folder), writable=False)


def log_finding(facts: StoreFacts) -> Finding | None:
    """A write-ahead log left next to a store nobody holds: a process stopped without closing it."""
    assert facts.engine is not None and facts.location is not None
    if facts.holder is not None:
        return None
    log = facts.engine.leftover_log(facts.location)  # reads and checks the log; changes nothing
    if log is None:
        return None
    if log.refused is not None:
        message = str(log.refused)
        return fail("store.log", message.split(". ")[0], _after(message), log=str(log.path))
    return info("store.log", "a process stopped without closing the store: the next open replays its log (nothing "
                             "acknowledged is lost)", None, log=str(log.path))


def health_finding(facts: StoreFacts, owner_pid: int | None) -> Finding:
    """The store's health in one line, from the owner or a read-only look; nothing is written."""
    assert facts.engine is not None and facts.location is not None and facts.path is not None
    if owner_pid is not None:
        return _health_from_owner(facts, owner_pid)
    if facts.holder is not None:
        return info("store.health", "not read: another process holds the file (see the owner line)")
    try:
        health = facts.engine.health(facts.location)
    except PcmemError as refused:
        return fail("store.health", str(refused), _fix_for(refused))
    counts, pending, missing, facts.profile = health.counts, health.pending_migrations, health.missing, health.profile
    shown = ", ".join(f"{value} {name.replace('_', ' ')}" for name, value in counts.items()) or "empty"
    data: dict[str, Any] = {**counts, "pending_migrations": pending, "missing": missing,
                            "embedding": facts.profile.model_id if facts.profile else None}
    if missing:
        return fail("store.health", f"{shown}; missing: {', '.join(missing)}", "pcmem check --repair", **data)
    if pending:
        return info("store.health", f"{shown}; made by an older pcmem: the next write updates its format "
                                    f"({len(pending)} migration(s))", None, **data)
    return ok("store.health", f"{shown}; format current (`--deep` runs the full `pcmem check`)", **data)


def deep_check_finding(facts: StoreFacts) -> Finding:
    """The full ``pcmem check`` (opens the file itself: refused while another process holds it)."""
    from pcmem.cli.check_command import require_file_maintenance
    from pcmem.compose.backends import open_backend

    assert facts.location is not None
    if facts.holder is not None:
        return warn("store.check", "the full check needs the file itself, which another process holds",
                    "run `pcmem doctor --deep` when that process has exited")
    try:
        backend = open_backend(facts.location, create=False, lock_timeout=0.0)
        try:
            report = require_file_maintenance(backend, "pcmem doctor --deep").check()
        finally:
            backend.close()
    except PcmemError as refused:
        return fail("store.check", f"pcmem check: {refused}", None)
    data = {"problems": report.problems, "notes": report.notes, "damaged_blocks": report.damaged_blocks}
    if not report.ok:
        return fail("store.check", f"pcmem check found {len(report.problems)} problem(s): {report.problems[0]}",
                    "pcmem check (for the list), then pcmem check --repair", **data)
    return ok("store.check", f"pcmem check: ok ({report.entry_versions} entry versions, every block and projection "
                             "verified)", **data)


def _health_from_owner(facts: StoreFacts, pid: int) -> Finding:
    from pcmem.owner.dial import NO_OWNER, ask_owner
    from pcmem.store.engine import holder_of

    assert facts.engine is not None and facts.location is not None and facts.path is not None
    try:
        scopes = ask_owner(facts.path, {"op": "store.scopes", "scope": None, "args": {}, "rerank": None},
                           holder_of(facts.engine, facts.location))
    except PcmemError as refused:
        return fail("store.health", f"the owner (process {pid}) answered: {refused}", None)
    if scopes is NO_OWNER:
        return info("store.health", "not read: the owner went away while asked")
    active = sum(scope.get("active_count", 0) for scope in scopes)
    return ok("store.health", f"{len(scopes)} scopes, {active} active entries (answered by the owner, process {pid})",
              scopes=len(scopes), active_entries=active)


def _fix_for(error: PcmemError) -> str | None:
    """What to do about an error met while reading the store."""
    from pcmem.errors import StoreFormatError, StorePermissionError, StoreVersionError

    if isinstance(error, StoreVersionError):
        return "upgrade pcmem (pip install -U pcmem) in this environment"
    if isinstance(error, StoreFormatError):
        return "point --db at a pcmem store, or restore this one from a backup (`pcmem migrate` copies what it can)"
    if isinstance(error, StorePermissionError):
        return "make the file and its folder readable for you"
    return _after(str(error))


def _after(message: str) -> str | None:
    """The advice in an error message (what follows its first sentence)."""
    _, _, rest = message.partition(". ")
    return rest or None


def _my_uid(fallback: int) -> int:
    return os.getuid() if hasattr(os, "getuid") else fallback


def _size(count: int) -> str:
    size, unit = float(count), "B"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            break
        size /= 1024
    return f"{count} B" if unit == "B" else f"{size:.1f} {unit}"
