"""Benchmarks. Each prints ratios against a reference measured in the same run (these machines are shared and
noisy, so absolute numbers alone mean little)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pcmem.errors import InputError


def slug(name: str) -> str:
    """``name`` made safe inside a file or database name (letters, digits, ``-`` and ``_``; the last 60 characters,
    where model paths differ)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[-60:]


def csv_list(value: str, cast: Callable[[str], Any] = str) -> list[Any]:
    """A comma-separated command-line value as a list (empty items dropped), each item through ``cast``; an item
    ``cast`` refuses is an InputError naming the whole value."""
    try:
        return [cast(item.strip()) for item in value.split(",") if item.strip()]
    except ValueError:
        raise InputError(f"cannot parse list {value!r}") from None
