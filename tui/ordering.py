"""A scope's entries kept in the list's order across live refreshes: a write moves the rows it changed, not all.

While an agent writes, every write brings the entries screen a manifest that differs from the last in an entry or
two (:mod:`pcmem_tui.manifests` keeps the unchanged entries as the same objects). Sorting the whole scope again on
each one cost a Python sort key per entry (a casefold per text for the text order) and a new list of every row: at
10,000 entries over 100 ms of the event loop per write under load, and the garbage of it set off full collections
that held the loop for hundreds of ms more; a key pressed meanwhile waited for both. Here the entries that are not
the same objects as before are found in one pass of identity checks, and only they leave and re-enter the order
(by bisection: every sort key ends with the entry id, so keys are unique).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any

from pcmem import MemoryEntry

SortKey = Callable[[MemoryEntry], tuple[Any, ...]]
Shown = Callable[[MemoryEntry], bool]

#: Past this many changed entries, one sort of the whole scope is cheaper than moving them one by one (each move
#: shifts the list in C; a full sort calls the Python key per entry).
MOVE_LIMIT = 200


class OrderedEntries:
    """The entries ``shown`` lets through, in ``key`` order; :meth:`update` follows a new manifest."""

    def __init__(self, key: SortKey, shown: Shown) -> None:
        self._key, self._shown = key, shown
        self._by_id: dict[str, MemoryEntry] = {}
        self._key_of: dict[str, tuple[Any, ...]] = {}  # the key each listed entry was placed by
        self._keys: list[tuple[Any, ...]] = []  # sorted; aligned with _entries
        self._entries: list[MemoryEntry] = []
        #: Sort keys computed by the last rebuild or update (what a test counts; a rebuild computes one per entry).
        self.keys_computed = 0
        #: Whether the last rebuild or update sorted everything (a first load, or a whole reread: all new objects).
        self.sorted_all = False
        #: The entries the last update found changed or added (none after a rebuild: everything would be).
        self.changed: list[MemoryEntry] = []

    @property
    def entries(self) -> list[MemoryEntry]:
        return self._entries

    def rebuild(self, entries: Iterable[MemoryEntry]) -> None:
        self._by_id = {entry.entry.entry_id: entry for entry in entries}
        placed = [(self._key(entry), entry) for entry in self._by_id.values() if self._shown(entry)]
        placed.sort(key=lambda pair: pair[0])
        self._keys = [key for key, _ in placed]
        self._entries = [entry for _, entry in placed]
        self._key_of = {entry.entry.entry_id: key for key, entry in placed}
        self.keys_computed, self.sorted_all, self.changed = len(placed), True, []

    def update(self, entries: tuple[MemoryEntry, ...]) -> None:
        """Follow ``entries`` (the new manifest's): the ones that are new objects (added or changed) and the ones
        gone move; the rest stay where they are. Many changes (a whole reread: every object is new) sort again."""
        by_id = self._by_id
        changed: list[MemoryEntry] = []
        kept = 0
        for entry in entries:
            if by_id.get(entry.entry.entry_id) is entry:
                kept += 1
            else:
                changed.append(entry)
                if len(changed) > MOVE_LIMIT:
                    self.rebuild(entries)
                    return
        still_there = kept + sum(1 for entry in changed if entry.entry.entry_id in by_id)
        gone = [] if still_there == len(by_id) else [entry_id for entry_id in by_id.keys() - {
            entry.entry.entry_id for entry in entries}]
        self.keys_computed, self.sorted_all, self.changed = 0, False, changed
        for entry_id in [*gone, *(entry.entry.entry_id for entry in changed)]:
            self._take_out(entry_id)
        for entry in changed:
            by_id[entry.entry.entry_id] = entry
            if self._shown(entry):
                key = self._key(entry)
                self.keys_computed += 1
                position = bisect_left(self._keys, key)
                self._keys.insert(position, key)
                self._entries.insert(position, entry)
                self._key_of[entry.entry.entry_id] = key

    def _take_out(self, entry_id: str) -> None:
        self._by_id.pop(entry_id, None)
        key = self._key_of.pop(entry_id, None)
        if key is None:  # not listed (hidden by ``shown``)
            return
        position = bisect_left(self._keys, key)
        del self._keys[position]
        del self._entries[position]
