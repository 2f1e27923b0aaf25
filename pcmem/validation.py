"""Normalisation and limits for every value that enters the store.

All functions raise :class:`~pcmem.errors.InputError` with a message that names the offending field, and return the
normalised value. They are pure, so every public entry point can call them before touching the store.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pcmem.errors import InputError

MAX_TEXT_BYTES = 8192  # entry text and queries are 1..8192 UTF-8 bytes after normalisation.
MAX_ID_CHARS = 128  # entry ids are printable ASCII, at most 128 characters.
MAX_SCOPE_CHARS = 256  # scope ids are 1..256 characters, not blank.
MAX_KIND_CHARS = 128  # as PowerContext's schema, pcmem's /openapi.json and the MCP tool schema say
MAX_REASON_CHARS = 512  # why a write was made (PowerContext's reason): one line of audit trail, not a second text
MAX_METADATA_BYTES = 4096  # metadata is a small annotation (a source turn id, a timestamp), not a second payload.
MAX_METADATA_DEPTH = 8

# Tab, newline, carriage return, vertical tab and form feed are whitespace that real text (chat logs) contains;
# every other C0/C1 control character (NUL, ESC, ...) is refused.
_ALLOWED_CONTROLS = frozenset("\t\n\r\x0b\x0c")


def _refused_controls_class() -> str:
    """The control characters :func:`_reject_unencodable` refuses, as the body of a regex class (``\\x00-\\x08...``)."""
    refused = [code for code in range(0xA0) if unicodedata.category(chr(code)) == "Cc"
               and chr(code) not in _ALLOWED_CONTROLS]
    runs: list[tuple[int, int]] = []
    for code in refused:
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return "".join(f"\\x{low:02x}" if low == high else f"\\x{low:02x}-\\x{high:02x}" for low, high in runs)


#: The same rule as a regex class body, for schemas (``/openapi.json``, the MCP tool schemas): a generated client
#: then never sends a value that validation refuses. (Lone surrogates, also refused, cannot be named portably.)
REFUSED_CONTROLS = _refused_controls_class()
#: A JSON Schema ``pattern`` for text without refused control characters.
NO_CONTROLS_PATTERN = f"^[^{REFUSED_CONTROLS}]*$"
MAX_JSON_BYTES = 1 << 20  # one metadata argument or one JSONL line
MAX_JSON_DEPTH = 64  # well above metadata's own limit; stops 60,000 nested "[" before the parser recurses
MAX_JSON_INT_DIGITS = 40  # any real id or count; Python refuses > 4300 digits with a bare ValueError
_ID_PATTERN = re.compile(r"[\x21-\x7e]+")


def _reject_unencodable(value: str, field: str) -> None:
    for index, char in enumerate(value):
        category = unicodedata.category(char)
        if category == "Cs":
            raise InputError(f"{field} contains a lone surrogate (U+{ord(char):04X}) at position {index}")
        if category == "Cc" and char not in _ALLOWED_CONTROLS:
            raise InputError(f"{field} contains control character U+{ord(char):04X} at position {index}")


def require_str(value: object, field: str) -> str:
    """A str as such (pydantic alone would decode bytes)."""
    if not isinstance(value, str):
        raise InputError(f"{field} must be a string, got {type(value).__name__}")
    return value


def normalize_text(value: object, field: str = "text") -> str:
    """NFC-normalise and strip ``value``; it must then be 1..8192 UTF-8 bytes without control characters."""
    text = _normalized(value, field)
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InputError(f"{field} is {size} UTF-8 bytes; the limit is {MAX_TEXT_BYTES}")
    return text


def _normalized(value: object, field: str) -> str:
    """``value`` NFC-normalised and stripped; not empty, no control characters (no size limit: the caller's)."""
    text = require_str(value, field)
    _reject_unencodable(text, field)
    text = unicodedata.normalize("NFC", text).strip()
    if not text or all(char.isspace() or unicodedata.category(char) == "Cf" for char in text):
        # zero-width spaces/joiners and byte-order marks are invisible format characters: text of only those is empty
        raise InputError(f"{field} is empty after stripping whitespace and invisible characters")
    return text


def validate_scope(value: object) -> str:
    """A scope id: 1..256 characters, not blank, no control characters. Returned NFC-normalised, not stripped."""
    scope = require_str(value, "scope")
    _reject_unencodable(scope, "scope")
    scope = unicodedata.normalize("NFC", scope)
    if not scope.strip():
        raise InputError("scope must not be empty or blank")
    if len(scope) > MAX_SCOPE_CHARS:
        raise InputError(f"scope is {len(scope)} characters; the limit is {MAX_SCOPE_CHARS}")
    return scope


def validate_id(value: object, field: str = "entry_id") -> str:
    """An id: 1..128 printable ASCII characters without spaces."""
    ident = require_str(value, field)
    if not ident or len(ident) > MAX_ID_CHARS or not _ID_PATTERN.fullmatch(ident):
        raise InputError(f"{field} must be 1..{MAX_ID_CHARS} printable ASCII characters without spaces, got {ident!r}")
    return ident


def validate_reason(value: object) -> str | None:
    """Why a write is made: ``None``, or text normalised as :func:`normalize_text` does, at most 512 characters. Blank
    text is no reason (``None``): PowerContext's wire allows an empty ``reason``."""
    if value is None:
        return None
    reason = require_str(value, "reason")
    if not reason.strip():
        return None
    reason = _normalized(reason, "reason")  # its own limit, not the text's 8192 bytes (which it used to name)
    if len(reason) > MAX_REASON_CHARS:
        raise InputError(f"reason is {len(reason)} characters; the limit is {MAX_REASON_CHARS}")
    return reason


def validate_kind(value: object) -> str:
    """An entry kind: an open label such as "fact" or "preference", 1..128 characters."""
    kind = require_str(value, "kind")
    _reject_unencodable(kind, "kind")
    kind = unicodedata.normalize("NFC", kind).strip()
    if not kind or len(kind) > MAX_KIND_CHARS:
        shown = repr(kind) if len(kind) <= 40 else f"{len(kind)} characters"  # never echo a long value back
        raise InputError(f"kind must be 1..{MAX_KIND_CHARS} characters, got {shown}")
    return kind


def validate_revision(value: object, field: str = "revision") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{field} must be a non-negative integer, got {_shown(value)}")
    return value


def validate_int(value: object, field: str) -> int:
    """An integer as such: ``True``, ``1.0`` and ``"1"`` are refused, not coerced (a bool is an int in Python)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{field} must be an integer, got {_shown(value)}")
    return value


def validate_flag(value: object, field: str) -> bool:
    """``True`` or ``False`` as such: ``"yes"``, ``"false"`` and ``1`` are refused, not read as a truth value."""
    if not isinstance(value, bool):
        raise InputError(f"{field} must be True or False, got {_shown(value)}")
    return value


def validate_timestamp(value: object, field: str) -> datetime | str:
    """A datetime, or ISO 8601 text (JSON has no datetime type); a number is refused, never read as Unix time."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and not _numeric(value):
        return value  # the model parses it (and refuses text that is no date)
    raise InputError(f"{field} must be a datetime or an ISO 8601 string, got {_shown(value)}")


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _shown(value: object) -> str:
    """A wrong value as a message shows it: its type and a short repr (one line, however large the value)."""
    shown = repr(value)
    return f"{shown if len(shown) <= 60 else shown[:57] + '...'} ({type(value).__name__})"


def _check_json_value(value: Any, path: str, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise InputError(f"metadata nests deeper than {MAX_METADATA_DEPTH} levels at {path}")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if value.bit_length() > 133:  # ~40 decimal digits, see MAX_JSON_INT_DIGITS
            raise InputError(f"metadata number at {path} has more than {MAX_JSON_INT_DIGITS} digits")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"metadata value at {path} is not a finite number")
        return
    if isinstance(value, str):
        _reject_unencodable(value, f"metadata value at {path}")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json_value(item, f"{path}[{index}]", depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputError(f"metadata key {key!r} at {path} must be a string")
            _reject_unencodable(key, f"metadata key at {path}")
            _check_json_value(item, f"{path}.{key}", depth + 1)
        return
    raise InputError(f"metadata value at {path} has type {type(value).__name__}, which is not JSON")


def validate_metadata(value: object) -> dict[str, Any]:
    """A JSON object of at most 4096 bytes (serialised); ``None`` means no metadata."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"metadata must be a JSON object, got {type(value).__name__}")
    _check_json_value(value, "$", 0)
    size = len(canonical_json(value).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise InputError(f"metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}")
    return json.loads(canonical_json(value))


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise InputError(f"a JSON number has {len(digits.lstrip('-'))} digits; the limit is {MAX_JSON_INT_DIGITS}")
    return int(digits)


def _json_depth(raw: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (a linear scan; the parser itself would recurse)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in raw:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def parse_json(raw: object, what: str = "input") -> Any:
    """Parse untrusted JSON text with size, nesting and number-length limits: every failure is an InputError."""
    text = require_str(raw, what)
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_JSON_BYTES:
        raise InputError(f"{what} is {size} bytes of JSON; the limit is {MAX_JSON_BYTES}")
    if ("[" in text or "{" in text) and _json_depth(text) > MAX_JSON_DEPTH:
        raise InputError(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as error:
        raise InputError(f"{what} is not valid JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise InputError(f"{what} nests too deeply") from None


def parse_metadata_json(raw: str) -> dict[str, Any]:
    """Parse a metadata argument given as JSON text (CLI, import files)."""
    return validate_metadata(parse_json(raw, "metadata"))


def metadata_filter(pairs: Sequence[str]) -> dict[str, Any] | None:
    """``KEY=JSON`` pairs as a search's metadata filter (``pcmem search --where``, the TUI's filter field): a value
    that is not JSON is taken as a string (``user=ana``); ``None`` for no pairs."""
    wanted: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InputError(f"metadata filter takes KEY=JSON pairs (e.g. user=ana turn=3), got {pair!r}")
        try:
            wanted[key] = parse_metadata_json(f'{{"v": {raw}}}')["v"]
        except InputError:
            wanted[key] = raw
    return wanted or None


def canonical_json(value: Any) -> str:
    """Stable JSON text: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

