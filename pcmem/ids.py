"""Identifier and hash helpers."""

from __future__ import annotations

import hashlib
import os
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id(prefix: str) -> str:
    """A time-sortable, collision-resistant id such as ``ent_01jd5…``: 48 bits of milliseconds + 80 random bits."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return f"{prefix}_{''.join(reversed(chars))}"


def content_hash(text: str) -> str:
    """sha256 of the normalised text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
