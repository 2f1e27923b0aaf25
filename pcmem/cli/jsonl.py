"""Reading entries from JSON Lines files, all-or-nothing."""

from __future__ import annotations

import json
from pathlib import Path

from pcmem.cli.progress import progress_bar
from pcmem.errors import InputError
from pcmem.types.memory import NewEntry

_FIELDS = {"text", "kind", "metadata", "entry_id"}


def parse_line(line: str, number: int, path: Path) -> NewEntry:
    where = f"{path}:{number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(f"{where}: not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: each line must be a JSON object with a \"text\" field")
    unknown = set(record) - _FIELDS
    if unknown:
        raise InputError(f"{where}: unknown fields {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
    if "text" not in record:
        raise InputError(f"{where}: missing \"text\"")
    try:
        return NewEntry(**record)
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def read_entries(path: Path, *, show_progress: bool = True) -> list[NewEntry]:
    """Parse and validate every line of ``path`` (blank lines are skipped) before anything is written."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text (byte {error.start})") from None
    entries: list[NewEntry] = []
    with progress_bar(f"checking {path.name}", enabled=show_progress) as advance:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                entries.append(parse_line(line, number, path))
            if number % 1000 == 0 or number == len(lines):
                advance(number, len(lines))
    return entries
