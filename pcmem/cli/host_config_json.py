"""One server entry of a host's JSON configuration, added, replaced or removed with every other byte kept.

``json.loads`` then ``json.dumps`` would re-indent and re-order a file the user (or the host) wrote, and
``~/.claude.json`` is hundreds of lines of Claude Code's own state. So the text is parsed first (what is not JSON is
refused, never rewritten), the objects on the way to the entry are located with :mod:`json`'s own scanner, and only
the entry's text is spliced in or out, in the file's indentation and line endings. The result is parsed again and
must equal the intended data; if it does not, the data is written whole instead (every key kept, the layout not).

Pure functions of text: nothing here reads or writes a file.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pcmem.errors import InputError

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
DEFAULT_UNIT = "  "


def load(text: str, where: str) -> dict[str, Any]:
    """The configuration ``text`` holds (an empty text is an empty configuration); InputError naming ``where`` and
    the line when it is not a JSON object."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        hint = (" (it looks like JSON with comments or trailing commas, which pcmem cannot keep when it rewrites the "
                "file)" if _looks_like_jsonc(text) else "")
        raise InputError(f"{where} is not valid JSON: {error}{hint}; pcmem leaves it untouched") from None
    if not isinstance(data, dict):
        raise InputError(f"{where} holds a JSON {type(data).__name__}, not an object; pcmem leaves it untouched")
    return data


def entry_at(data: dict[str, Any], path: Sequence[str], name: str, where: str) -> Any:
    """The entry ``name`` inside the object at ``path`` (``None`` when absent); InputError when something on the way
    is not an object."""
    servers = _object_on_path(data, path, where, create=False)
    return None if servers is None else servers.get(name)


def set_entry(text: str, path: Sequence[str], name: str, entry: dict[str, Any], where: str) -> str:
    """``text`` with ``entry`` as member ``name`` of the object at ``path`` (created if missing)."""
    data = load(text, where)
    if entry_at(data, path, name, where) == entry:
        return text
    expected = copy.deepcopy(data)
    servers = _object_on_path(expected, path, where, create=True)
    assert servers is not None  # created
    servers[name] = entry
    if not text.strip():
        return _dump(expected, DEFAULT_UNIT, "\n")
    return _checked(_spliced_set(text, path, name, entry, where), expected, text)


def remove_entry(text: str, path: Sequence[str], name: str, where: str) -> str:
    """``text`` without member ``name`` of the object at ``path`` (unchanged when it has none)."""
    data = load(text, where)
    servers = _object_on_path(data, path, where, create=False)
    if servers is None or name not in servers:
        return text
    expected = copy.deepcopy(data)
    del _object_on_path(expected, path, where, create=False)[name]  # type: ignore[union-attr]
    return _checked(_spliced_remove(text, path, name, where), expected, text)


def _object_on_path(data: dict[str, Any], path: Sequence[str], where: str, *, create: bool) -> dict[str, Any] | None:
    current = data
    for key in path:
        child = current.get(key)
        if child is None and create:
            child = current[key] = {}
        if child is None:
            return None
        if not isinstance(child, dict):
            raise InputError(f"{where}: {key!r} is a JSON {type(child).__name__}, not an object of servers; "
                             "pcmem leaves it untouched")
        current = child
    return current


# --- locating members in the text ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    key: str
    start: int  # the key's opening quote
    value_start: int
    end: int  # just after the value


@dataclass(frozen=True)
class _Object:
    open: int  # the "{"
    close: int  # the "}"
    members: list[_Member]


def _skip(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]


def _object_at(text: str, index: int) -> _Object:
    """The object whose ``{`` is at ``index`` (the text is known to be valid JSON)."""
    members: list[_Member] = []
    position = _skip(text, index + 1)
    while text[position] != "}":
        key, after_key = _DECODER.raw_decode(text, position)  # the key is a JSON string
        value_start = _skip(text, _skip(text, after_key) + 1)  # past the colon
        _, end = _DECODER.raw_decode(text, value_start)
        members.append(_Member(key, position, value_start, end))
        position = _skip(text, end)
        if text[position] == ",":
            position = _skip(text, position + 1)
    return _Object(index, position, members)


def _member(obj: _Object, key: str, where: str) -> _Member | None:
    found = [member for member in obj.members if member.key == key]
    if len(found) > 1:
        raise InputError(f"{where} has the key {key!r} {len(found)} times; fix it by hand first")
    return found[0] if found else None


def _walk(text: str, path: Sequence[str], where: str) -> tuple[_Object, list[str]]:
    """The deepest object on ``path`` that exists, and the keys of ``path`` still missing below it."""
    obj = _object_at(text, _skip(text, 0))
    for depth, key in enumerate(path):
        member = _member(obj, key, where)
        if member is None:
            return obj, list(path[depth:])
        obj = _object_at(text, member.value_start)
    return obj, []


# --- layout ------------------------------------------------------------------------------------------------------


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_indent(text: str, index: int) -> str | None:
    """The blanks before ``index`` on its line, or ``None`` when something else comes first on that line."""
    line_start = text.rfind("\n", 0, index) + 1
    prefix = text[line_start:index]
    return prefix if prefix.strip(" \t") == "" else None


def _indent_unit(text: str) -> str:
    """One level of indentation as the file writes it: the top-level object's first member's, else two spaces."""
    root = _object_at(text, _skip(text, 0))
    if root.members:
        indent = _line_indent(text, root.members[0].start)
        if indent:
            return indent
    return DEFAULT_UNIT


def _own_indent(text: str, index: int) -> str:
    """The indentation of the line holding ``index`` (its leading blanks)."""
    line_start = text.rfind("\n", 0, index) + 1
    line = text[line_start:index]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _render(value: Any, indent: str, unit: str, newline: str) -> str:
    """``value`` as JSON whose first line continues a line indented by ``indent``: objects one member a line, a list
    of plain values on one line (``"args": ["mcp"]``), as people write these files."""
    inner = indent + unit
    if isinstance(value, dict) and value:
        members = [f"{inner}{json.dumps(key, ensure_ascii=False)}: {_render(item, inner, unit, newline)}"
                   for key, item in value.items()]
        return "{" + newline + ("," + newline).join(members) + newline + indent + "}"
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        items = [inner + _render(item, inner, unit, newline) for item in value]
        return "[" + newline + ("," + newline).join(items) + newline + indent + "]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# --- splicing ----------------------------------------------------------------------------------------------------


def _spliced_set(text: str, path: Sequence[str], name: str, entry: dict[str, Any], where: str) -> str:
    obj, missing = _walk(text, path, where)
    unit, newline = _indent_unit(text), _newline(text)
    if missing:  # add the missing objects around the entry as one member of the deepest one there is
        value: Any = {name: entry}
        for key in reversed(missing[1:]):
            value = {key: value}
        return _inserted(text, obj, missing[0], value, unit, newline)
    existing = _member(obj, name, where)
    if existing is None:
        return _inserted(text, obj, name, entry, unit, newline)
    if "\n" not in text:
        rendered = json.dumps(entry, ensure_ascii=False)
    else:
        rendered = _render(entry, _own_indent(text, existing.start), unit, newline)
    return text[: existing.value_start] + rendered + text[existing.end:]


def _inserted(text: str, obj: _Object, key: str, value: Any, unit: str, newline: str) -> str:
    """``text`` with the member ``key: value`` added at the end of ``obj``."""
    key_text = json.dumps(key, ensure_ascii=False)
    if "\n" not in text:  # a one-line file stays one line
        member = f"{key_text}: {json.dumps(value, ensure_ascii=False)}"
        if obj.members:
            return text[: obj.members[-1].end] + ", " + member + text[obj.members[-1].end:]
        return text[: obj.open + 1] + member + text[obj.close:]
    if obj.members:
        last = obj.members[-1]
        indent = _line_indent(text, last.start)
        if indent is None:  # members side by side on one line: continue that line
            member = f"{key_text}: {json.dumps(value, ensure_ascii=False)}"
            return text[: last.end] + ", " + member + text[last.end:]
        member = f"{key_text}: {_render(value, indent, unit, newline)}"
        return text[: last.end] + "," + newline + indent + member + text[last.end:]
    outer = _own_indent(text, obj.open)
    indent = outer + unit
    member = f"{key_text}: {_render(value, indent, unit, newline)}"
    return text[: obj.open + 1] + newline + indent + member + newline + outer + text[obj.close:]


def _spliced_remove(text: str, path: Sequence[str], name: str, where: str) -> str:
    obj, _ = _walk(text, path, where)
    member = _member(obj, name, where)
    assert member is not None  # the data has it
    position = obj.members.index(member)
    if len(obj.members) == 1:
        return text[: obj.open + 1] + text[obj.close:]
    if position > 0:  # from the end of the member before it: its comma, the blanks, the key and the value
        return text[: obj.members[position - 1].end] + text[member.end:]
    return text[: member.start] + text[obj.members[1].start:]


def _checked(candidate: str, expected: dict[str, Any], original: str) -> str:
    """The spliced text when it means exactly ``expected``; otherwise ``expected`` written whole."""
    try:
        if json.loads(candidate) == expected:
            return candidate
    except ValueError:
        pass
    return _dump(expected, _indent_unit(original), _newline(original))


def _dump(data: dict[str, Any], unit: str, newline: str) -> str:
    return _render(data, "", unit, newline) + newline


def _looks_like_jsonc(text: str) -> bool:
    return bool(re.search(r"^\s*//|/\*|,\s*[}\]]", text, re.MULTILINE))


def snippet(path: Sequence[str], name: str, entry: dict[str, Any]) -> str:
    """The text a user would paste into an empty configuration: ``{PATH...: {NAME: ENTRY}}``."""
    value: Any = {name: entry}
    for key in reversed(path):
        value = {key: value}
    return _dump(value, DEFAULT_UNIT, "\n")
