"""One table of a host's TOML configuration (Codex's ``[mcp_servers.NAME]``), written, replaced or removed with every
other line kept.

The standard library reads TOML (:mod:`tomllib`) but does not write it, and pcmem depends on no TOML writer; a
general one would also re-format the user's file. What pcmem writes is one table of plain values (a string, a list of
strings, a table of strings), so this module renders that table itself and splices it in as whole lines: a table is
its header line and the lines up to the next header. Every edit is checked by parsing the result: it must mean the
old configuration with only this table changed, else nothing is written (InputError saying to edit by hand) — which
is what happens when the table is spelt another way (dotted keys, an inline table) that whole-line edits cannot reach.

Pure functions of text: nothing here reads or writes a file.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Sequence
from typing import Any

from pcmem.errors import InputError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"\s*\[(?!\[)(?P<keys>[^\]#]*)\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"\s*\[")


def load(text: str, where: str) -> dict[str, Any]:
    """The configuration ``text`` holds; InputError naming ``where`` when it is not TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{where} is not valid TOML: {error}; pcmem leaves it untouched") from None


def table_at(data: dict[str, Any], path: Sequence[str]) -> Any:
    current: Any = data
    for key in path:
        if not isinstance(current, dict):
            return None
        current = current.get(key)
    return current


def render_table(path: Sequence[str], values: dict[str, Any], newline: str = "\n") -> str:
    """``[a.b]`` and one ``key = value`` line per value (a table of strings as an inline table)."""
    lines = [f"[{'.'.join(_key(key) for key in path)}]"]
    lines += [f"{_key(key)} = {_value(value)}" for key, value in values.items()]
    return newline.join(lines) + newline


def set_table(text: str, path: Sequence[str], values: dict[str, Any], where: str) -> str:
    """``text`` with the table at ``path`` holding exactly ``values`` (appended when absent)."""
    data = load(text, where)
    if table_at(data, path) == values:
        return text
    expected = copy.deepcopy(data)
    _parent(expected, path)[path[-1]] = values
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    blocks = _blocks(lines, path)
    table = render_table(path, values, newline)
    if blocks:
        first, *rest = blocks
        rest = [(_after_blank_lines(lines, start), end) for start, end in rest]  # with the blank lines that set them off
        kept = [line for index, line in enumerate(lines) if not any(start <= index < end for start, end in rest)]
        shift = sum(end - start for start, end in rest if start < first[0])
        start, end = first[0] - shift, first[1] - shift
        candidate = "".join(kept[:start]) + table + "".join(kept[end:])
    else:
        body = text if not text or text.endswith(("\n", "\r")) else text + newline
        candidate = body + (newline if body.strip() else "") + table
    return _checked(candidate, expected, where, table)


def remove_table(text: str, path: Sequence[str], where: str) -> str:
    """``text`` without the table at ``path`` and its sub-tables (unchanged when there is none)."""
    data = load(text, where)
    if table_at(data, path) is None:
        return text
    expected = copy.deepcopy(data)
    del _parent(expected, path)[path[-1]]
    if not _parent(expected, path) and table_at(data, path[:-1]) is not None and len(path) > 1:
        # [mcp_servers.pcmem] alone made the [mcp_servers] table: without it there is no such table either
        implied = copy.deepcopy(expected)
        del _parent(implied, path[:-1])[path[-2]]
        if _blocks_of_parent_missing(text, path):
            expected = implied
    lines = text.splitlines(keepends=True)
    blocks = _blocks(lines, path)
    kept = [line for index, line in enumerate(lines) if not any(start <= index < end for start, end in blocks)]
    if blocks and blocks[-1][1] == len(lines) and kept and not kept[-1].strip():
        kept.pop()  # the blank line set before the table when it was appended
    return _checked("".join(kept), expected, where, None)


def _blocks_of_parent_missing(text: str, path: Sequence[str]) -> bool:
    """Whether nothing but the tables under ``path`` defines the table above it (no ``[mcp_servers]`` header of its
    own, no ``mcp_servers.x`` key elsewhere): removing ``path`` then removes the parent too."""
    lines = text.splitlines(keepends=True)
    own = [index for index, line in _outside_strings(lines) if _header_keys(line) == list(path[:-1])]
    return not own


def _parent(data: dict[str, Any], path: Sequence[str]) -> dict[str, Any]:
    current = data
    for key in path[:-1]:
        child = current.setdefault(key, {})
        if not isinstance(child, dict):
            raise InputError(f"{key!r} is not a table of servers")
        current = child
    return current


def _checked(candidate: str, expected: dict[str, Any], where: str, table: str | None) -> str:
    try:
        if tomllib.loads(candidate) == expected:
            return candidate
    except tomllib.TOMLDecodeError:
        pass
    by_hand = f"; the table to write is:\n{table}" if table else ""
    raise InputError(f"{where} spells this table in a way pcmem cannot edit line by line (dotted keys or an inline "
                     f"table): edit it by hand{by_hand}")


# --- finding a table's lines ---------------------------------------------------------------------------------------


def _blocks(lines: list[str], path: Sequence[str]) -> list[tuple[int, int]]:
    """The line ranges ``[start, end)`` of the table at ``path`` and of its sub-tables: from the header to the last
    line before the next header that is neither blank nor a comment (those belong with what follows)."""
    headers = [(index, _header_keys(line)) for index, line in _outside_strings(lines) if _ANY_HEADER.match(line)]
    blocks = []
    for position, (index, keys) in enumerate(headers):
        if keys is None or tuple(keys[: len(path)]) != tuple(path):
            continue
        end = headers[position + 1][0] if position + 1 < len(headers) else len(lines)
        while end > index + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
        blocks.append((index, end))
    return blocks


def _after_blank_lines(lines: list[str], start: int) -> int:
    while start > 0 and not lines[start - 1].strip():
        start -= 1
    return start


def _outside_strings(lines: list[str]) -> list[tuple[int, str]]:
    """The lines that do not start inside a multi-line string (a ``[`` there is text, not a header)."""
    found, inside = [], None
    for index, line in enumerate(lines):
        if inside is None:
            found.append((index, line))
        for quote in ('"""', "'''"):
            if (inside is None or inside == quote) and line.count(quote) % 2:
                inside = None if inside == quote else quote
    return found


def _header_keys(line: str) -> list[str] | None:
    """The dotted key of a ``[table]`` header line (``None`` for an array-of-tables header or what cannot be read)."""
    match = _HEADER.match(line)
    if match is None:
        return None
    keys, rest = [], match.group("keys").strip()
    while rest:
        if rest[0] in "\"'":
            closing = rest.find(rest[0], 1)
            if closing < 0:
                return None
            raw = rest[1:closing]
            keys.append(json.loads(f'"{raw}"') if rest[0] == '"' else raw)
            rest = rest[closing + 1:].strip()
        else:
            bare = _BARE_KEY.match(rest)
            if bare is None:
                return None
            keys.append(bare.group())
            rest = rest[bare.end():].strip()
        if rest.startswith("."):
            rest = rest[1:].strip()
        elif rest:
            return None
    return keys


# --- rendering values -------------------------------------------------------------------------------------------


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and DEL, which JSON leaves raw, is escaped too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(key)} = {_value(item)}" for key, item in value.items()) + " }" if value else "{}"
    raise TypeError(f"pcmem writes no TOML {type(value).__name__}")
