"""Reading and rewriting a host's configuration file safely: a timestamped backup beside it, an atomic replace that
keeps the file's mode (and owner, when run as root), and a refusal when the file changed while pcmem edited it.

A symlinked configuration (dotfile managers link ``~/.claude.json`` and friends) is written through the link: the
file that changes is the link's target, and the link stays.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pcmem.errors import InputError

_BOM = "\ufeff"
NEW_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700


@dataclass(frozen=True)
class ConfigFile:
    path: Path  # as the user or the host names it
    target: Path  # the file that is read and written (symlinks followed)
    raw: bytes | None  # None: there is no file yet
    text: str  # without a byte-order mark
    bom: bool

    @property
    def exists(self) -> bool:
        return self.raw is not None

    def encode(self, text: str) -> bytes:
        return ((_BOM if self.bom else "") + text).encode("utf-8")


def read(path: Path) -> ConfigFile:
    """The file at ``path`` (absent is an empty configuration); InputError when it is no regular file or not UTF-8."""
    target = Path(os.path.realpath(path))
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return ConfigFile(path, target, None, "", False)
    except IsADirectoryError:
        raise InputError(f"{path} is a folder, not a configuration file") from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    if not stat.S_ISREG(os.stat(target).st_mode):
        raise InputError(f"{path} is not a regular file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; pcmem leaves it untouched") from None
    bom = text.startswith(_BOM)
    return ConfigFile(path, target, raw, text[1:] if bom else text, bom)


def diff(config: ConfigFile, new_text: str) -> str:
    """A unified diff from the file as it is to ``new_text`` (empty when they are the same)."""
    before = config.text.splitlines(keepends=True)
    after = new_text.splitlines(keepends=True)
    label = str(config.path)
    lines = difflib.unified_diff(before, after, fromfile=label if config.exists else "/dev/null", tofile=label)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def write(config: ConfigFile, new_text: str, *, private_folder: bool) -> Path | None:
    """Replace the file with ``new_text``; returns the backup of the old one (``None`` for a new file). The folder is
    made (0700 when ``private_folder``: a user's own configuration folder) if missing."""
    folder = config.target.parent
    folder.mkdir(parents=True, exist_ok=True, **({"mode": PRIVATE_FOLDER_MODE} if private_folder else {}))
    data = config.encode(new_text)
    info = os.stat(config.target) if config.exists else None
    _refuse_if_changed(config)
    backup = _backup(config.target) if config.exists else None
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{config.target.name}.", suffix=".pcmem-tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.chmod(temporary, stat.S_IMODE(info.st_mode) if info else NEW_FILE_MODE)
            if info is not None and hasattr(os, "fchown") and _is_root():
                os.fchown(handle.fileno(), info.st_uid, info.st_gid)  # root editing a user's file leaves it theirs
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _refuse_if_changed(config)
        os.replace(temporary, config.target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return backup


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _refuse_if_changed(config: ConfigFile) -> None:
    """Hosts rewrite their files while they run (Claude Code keeps its state in ``~/.claude.json``): a change
    between pcmem's read and its write would be lost, so pcmem stops instead."""
    try:
        now: bytes | None = config.target.read_bytes()
    except FileNotFoundError:
        now = None
    if now != config.raw:
        raise InputError(f"{config.path} changed while pcmem was editing it (is the host writing it?); nothing was "
                         "written: run the command again")


def _backup(target: Path) -> Path:
    """A copy of ``target`` beside it, named with the time (mode kept: it holds what the file held)."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = target.with_name(f"{target.name}.pcmem-backup-{stamp}")
    number = 1
    while backup.exists():
        backup = target.with_name(f"{target.name}.pcmem-backup-{stamp}-{number}")
        number += 1
    shutil.copy2(target, backup)
    return backup
