"""Identifier and hash helpers."""

from __future__ import annotations

import hashlib
import os
import threading
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


_last_value = 0
_last_lock = threading.Lock()


def new_id(prefix: str) -> str:
    """A time-sortable, collision-resistant id such as ``ent_01jd5…``: 48 bits of milliseconds + 80 random bits.

    Monotonic within a process (the ULID "monotonic" rule: within one millisecond the next id is the previous one
    plus one), so ids sort in creation order even inside one batch, where they share the millisecond and random
    bits alone would order the entries of a batch arbitrarily.
    """
    global _last_value
    with _last_lock:
        value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
        if value <= _last_value:
            value = _last_value + 1
        _last_value = value
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return f"{prefix}_{''.join(reversed(chars))}"


def content_hash(text: str) -> str:
    """sha256 of the normalised text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
