"""Reading entries from JSON Lines files, all-or-nothing: pcmem's own shape, one entry per line, as ``pcmem export``
writes it (``scope`` and ``created_at`` are optional)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

from pcmem.cli.progress import progress_bar
from pcmem.errors import InputError
from pcmem.types.memory import NewEntry
from pcmem.validation import parse_json, validate_scope

MAX_REPORTED_LINES = 20  # bad lines named in one error; the count covers all of them
STDIN = "-"

_FIELDS = {"text", "kind", "metadata", "entry_id", "created_at", "scope"}


class Imported(NamedTuple):
    """One entry of a file and the scope its line names (``None``: the command's ``--scope``)."""

    scope: str | None
    entry: NewEntry


def parse_line(line: str, number: int, path: Path) -> Imported:
    where = f"{path}:{number}"
    try:
        record = parse_json(line, "the line")
    except InputError as error:
        raise InputError(f"{where}: {str(error).replace('the line is not valid JSON', 'not valid JSON')}") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: each line must be a JSON object with a \"text\" field")
    unknown = set(record) - _FIELDS
    if unknown:
        raise InputError(f"{where}: unknown fields {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
    if "text" not in record:
        raise InputError(f"{where}: missing \"text\"")
    scope = record.pop("scope", None)
    try:
        return Imported(None if scope is None else validate_scope(scope), NewEntry(**record))
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``, or of standard input when the path is ``-``; a leading BOM is dropped."""
    try:
        raw = sys.stdin.buffer.read() if str(path) == STDIN else path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text (byte {error.start})") from None
    return text.removeprefix("\ufeff")


def read_entries(path: Path, *, show_progress: bool = True) -> list[Imported]:
    """Parse and validate every line of ``path`` (``-``: standard input; blank lines are skipped) before anything
    is written. Lines end at ``\n`` only (a U+2028 inside a JSON string is text, not a line break); every bad line
    is reported, up to :data:`MAX_REPORTED_LINES` of them."""
    lines = [line.removesuffix("\r") for line in read_text(path).split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    entries: list[Imported] = []
    problems: list[str] = []
    with progress_bar(f"checking {path.name or 'stdin'}", enabled=show_progress) as advance:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    entries.append(parse_line(line, number, path))
                except InputError as error:
                    problems.append(str(error))
            if number % 1000 == 0 or number == len(lines):
                advance(number, len(lines))
    if len(problems) == 1:
        raise InputError(problems[0])
    if problems:
        shown = "; ".join(problems[:MAX_REPORTED_LINES])
        more = f"; … and {len(problems) - MAX_REPORTED_LINES} more" if len(problems) > MAX_REPORTED_LINES else ""
        raise InputError(f"{len(problems)} bad lines, nothing imported: {shown}{more}")
    return entries
