"""Reading entries from JSON Lines files, all-or-nothing."""

from __future__ import annotations

import json
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from pcmem.cli.render import err_console
from pcmem.errors import InputError
from pcmem.memory.models import NewEntry

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
    with Progress(
        TextColumn("checking {task.fields[name]}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=err_console, disable=not (show_progress and err_console.is_terminal), transient=True,
    ) as progress:
        task = progress.add_task("check", total=len(lines), name=path.name)
        for number, line in enumerate(lines, start=1):
            if line.strip():
                entries.append(parse_line(line, number, path))
            progress.advance(task)
    return entries
