"""What a write transaction reads first — its scope's head and the embedding profiles — kept from one write to the
next while nobody else can have changed them.

Why: that read (write.opening_sql) is one of a remember's ~14 statements, ~0.4-0.6 ms of DuckDB's time, and an agent
writes one scope over and over. What it finds is exactly what the last write of the scope left, as long as no other
write of the file came between: a held store (this process alone has the file open) is changed only by this process's
write transactions, and each of those moves the file's write clock (transactions.py) at its COMMIT; a change outside
one (a repair, a reclaim) ticks the clock. So the last write's answer is kept with the clock's count after its
COMMIT, and used only while the clock still stands there — the same chain of writes the full-text id floor is exact
for (fts_index.IdFloor).
"""

from __future__ import annotations

from dataclasses import dataclass

from pcmem.store.duckdb.write_clock import WriteClock
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import MemoryRef

#: A scope's head (None: no memory yet) and the embedding profiles by role, as a write transaction opens with them.
Opening = tuple[MemoryRef | None, dict[str, EmbeddingProfile]]


@dataclass(frozen=True)
class _Kept:
    scope: str
    memory: MemoryRef | None
    profiles: dict[str, EmbeddingProfile]
    generation: int  # the clock's count right after the write that left them committed


class OpeningMemo:
    """The opening of the last write of a held store, while it is still true (see the module's docstring). Used
    under the backend's write lock."""

    def __init__(self, clock: WriteClock) -> None:
        self._clock = clock
        self._kept: _Kept | None = None

    def known(self, scope: str, *, nested: bool) -> Opening | None:
        """The opening of a write of ``scope`` starting now, when the last write left it and none came after; None
        when it must be read. Never inside an open transaction (``nested``): writes of that transaction are not
        committed, so the clock does not show them."""
        kept = self._kept
        if nested or kept is None or kept.scope != scope or not self._clock.still(kept.generation):
            return None
        return kept.memory, dict(kept.profiles)

    def committed(self, scope: str, opening: Opening, before: int, *, nested: bool) -> None:
        """A write of ``scope`` that began when the clock counted ``before`` ended without an error, leaving
        ``opening``. Kept only when its own COMMIT is the one move of the clock since (no other write, no change
        outside one, and not a write joined to an outer transaction, which commits later)."""
        after = self._clock.begun()
        memory, profiles = opening
        self._kept = _Kept(scope, memory, dict(profiles), after) if not nested and after == before + 1 else None

    def forget(self) -> None:
        """A write failed or rolled back: read the opening again next time."""
        self._kept = None
