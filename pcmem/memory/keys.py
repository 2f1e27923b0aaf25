"""Keys and entry identities: how a forgotten key is written again.

An entry id given by the caller is a *key*. The first entry under key ``K`` has the entry id ``K`` (so every store
written before this rule reads the same). When that entry is forgotten, its id stays a tombstone forever — erased
content is never resurrected and a citation of it keeps failing with EntryErasedError — and the next write of ``K``
creates a new entry with a new identity, the next *generation*: ``K~2``, then ``K~3`` after that one is forgotten.

Every operation that takes an entry id resolves a key to its newest generation that is not forgotten: remember
(with or without upsert), revise, retire, reactivate, forget, ``get_entry`` and ``history``. Citations name the
generation's own entry id and version id, so an old citation never reads the new entry's text. Ids ending in
``~<digits>`` are reserved for generations: a new entry cannot be created with one by hand (existing ones keep
working). Nothing is stored for the mapping: the generations of a key are found by probing ``K``, ``K~2``, ...
(only past a forgotten entry, which is rare).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from pcmem.errors import InputError
from pcmem.validation import MAX_ID_CHARS

_GENERATION = re.compile(r"~[0-9]+\Z")


def generations(key: str) -> Iterator[str]:
    """The entry ids of ``key``'s generations, oldest first: ``key``, ``key~2``, ``key~3``, ..."""
    yield key
    number = 2
    while True:
        entry_id = f"{key}~{number}"
        if len(entry_id) > MAX_ID_CHARS:
            raise InputError(f"key {key!r} was forgotten too many times to be written again under this name")
        yield entry_id
        number += 1


def is_generation(entry_id: str) -> bool:
    """Whether ``entry_id`` has the reserved form of a generation (``...~<digits>``)."""
    return _GENERATION.search(entry_id) is not None


def resolve(key: str, exists: Callable[[str], bool], erased: Callable[[str], bool]) -> tuple[str, bool]:
    """``key``'s current identity: ``(entry_id, exists)``.

    The first generation that is not forgotten when it exists (``exists=True``), else the next free generation id
    (``exists=False``: a write creates it there; a read finds nothing). ``exists(id)``: some revision has the id;
    ``erased(id)``: it was forgotten.
    """
    for entry_id in generations(key):
        if not exists(entry_id):
            return entry_id, False
        if not erased(entry_id):
            return entry_id, True
    raise AssertionError("unreachable")  # generations() ends with InputError
