"""What this process knows of its store file as of one write generation: scope heads, the embedding profiles, the
full-text index's totals and the query terms' ids and document frequencies. The one memo of the write generation:
searches read from it instead of the file, a write opens with the head and profiles it holds, and the profile lookup
before a write (which vectors to compute) answers from it. Each value is kept with the generation it was true at, and
nothing else decides when it goes stale.

Why this is safe: a backend holds its file, so its process is the only one that can change it: DuckDB lets
one process at a time open a file for writing, and a read-only opener shares its lock with readers only. Every write
of this process is a write transaction (:mod:`.transactions`), which moves the file's :class:`WriteClock` just before
and just after its COMMIT (a failed COMMIT too); until it commits, no other transaction sees it. So whatever was read
while the clock stood still at ``g`` stays true until it moves — also while a write of another thread is under way —
and a search that finds everything it needs in the memo of ``g`` runs no statement at all (a warm search would
otherwise pay for a BEGIN, the head and profile, the index statistics and a COMMIT, far more than its index work).
The write that made ``g`` leaves what it wrote (:meth:`GenerationMemo.after_write`): an agent that writes one scope
over and over opens each write without reading the head first, and the search after a write starts warm.

What the memo lacks is read then, each statement alone and checked against the clock once it ran
(:class:`LazySnapshot`): a head or terms' statistics, what brings a scope's view up to its head, a version not
cached. If a write began to commit since ``g``, the search raises
:class:`~pcmem.errors.SnapshotMoved` before it uses what it read, and the caller runs it again in a plain
snapshot. Hits never mix what the memo said with a newer state of the file.

Two caches of the backend are not kept by generation, on purpose: entry versions are immutable (the
:class:`~pcmem.store.common.VersionCache` is cleared by an erasure, the one change to a version), and a scope's
vector completeness is keyed by its revision (:class:`~pcmem.store.common.CompletenessMemo`), which outlives writes
to other scopes. The full-text id floor (:class:`~pcmem.store.duckdb.fts_index.IdFloor`) is exact along the same
chain of commits, counted by the same clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, TypeVar

import duckdb

from pcmem.errors import SnapshotMoved
from pcmem.store.duckdb.fts_cache import IndexTotals
from pcmem.store.duckdb.scope_views import CatchUps
from pcmem.store.duckdb.transactions import translate
from pcmem.store.duckdb.write_clock import WriteClock
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import MemoryRef

T = TypeVar("T")

#: Terms and scopes one memo remembers before it starts over (a read-only server never moves the clock).
MEMO_CAPACITY = 100_000

HeadAndProfile = tuple[MemoryRef | None, EmbeddingProfile | None]

#: A scope's head (None: no memory yet) and the embedding profiles by role, as a write transaction opens with them.
Opening = tuple[MemoryRef | None, dict[str, EmbeddingProfile]]


class GenerationMemo:
    """The values a search or a write reads first, for one generation of the write clock; a new generation starts
    empty."""

    def __init__(self, clock: WriteClock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._generation = -1
        self._heads: dict[str, HeadAndProfile] = {}
        self._totals: IndexTotals | None = None
        self._terms: dict[str, tuple[int, int] | None] = {}
        self._profile: tuple[EmbeddingProfile | None] | None = None  # the active profile, once known: (value,)
        self._profiles: dict[str, EmbeddingProfile] | None = None  # every role's profile, as the last write left them
        #: One thread at a time reads what every thread's next search misses after a write (a head, the totals).
        self.fills = CatchUps()

    def open(self) -> int | None:
        """The generation a search may use the memo at, or None while a write is committing."""
        generation = self._clock.standing()
        if generation is None:
            return None
        with self._lock:
            self._start(generation)
        return generation

    def _start(self, generation: int) -> None:
        """Forget what an older generation knew (under the lock)."""
        if generation != self._generation or len(self._terms) + len(self._heads) > MEMO_CAPACITY:
            self._generation, self._heads, self._totals, self._terms = generation, {}, None, {}
            self._profile = self._profiles = None

    def profile(self, generation: int) -> tuple[EmbeddingProfile | None] | None:
        """The store's active embedding profile at ``generation``, as ``(profile,)``, when known."""
        with self._lock:
            return self._profile if generation == self._generation else None

    def remember_profile(self, generation: int, profile: EmbeddingProfile | None) -> None:
        with self._lock:
            if generation == self._generation:
                self._profile = (profile,)

    def after_write(self, generation: int, scope: str, memory: MemoryRef | None,
                    profiles: dict[str, EmbeddingProfile]) -> None:
        """The write whose COMMIT made ``generation`` left ``scope`` at ``memory`` with ``profiles`` (by role): what
        the next search, write or profile lookup would read first, known without a statement (kept only while the
        clock still stands there: a write joined to an outer transaction, or another write committing since, is not
        this generation's)."""
        with self._lock:
            if self._clock.standing() != generation:
                return
            self._start(generation)
            self._heads[scope] = (memory, profiles.get("active"))
            self._profile, self._profiles = (profiles.get("active"),), dict(profiles)

    def opening(self, scope: str) -> Opening | None:
        """The head of ``scope`` and the profiles by role, when the memo of the generation the clock stands at knows
        both; None when a write must read them (never ask from inside an open transaction: its own writes are not
        committed, so the clock does not show them)."""
        with self._lock:
            if self._profiles is None or self._clock.standing() != self._generation or scope not in self._heads:
                return None
            return self._heads[scope][0], dict(self._profiles)

    def head(self, generation: int, scope: str) -> HeadAndProfile | None:
        with self._lock:
            return self._heads.get(scope) if generation == self._generation else None

    def remember_head(self, generation: int, scope: str, found: HeadAndProfile) -> None:
        with self._lock:
            if generation == self._generation:
                self._heads[scope] = found

    def index_terms(self, generation: int, terms: Sequence[str]
                    ) -> tuple[IndexTotals | None, dict[str, tuple[int, int] | None], list[str]]:
        """(the index totals, what is known of ``terms``: (termid, df) or None when absent, the terms still to read)."""
        with self._lock:
            if generation != self._generation:
                return None, {}, list(terms)
            known = {term: self._terms[term] for term in terms if term in self._terms}
            return self._totals, known, [term for term in terms if term not in known]

    def remember_index_terms(self, generation: int, totals: IndexTotals,
                             found: dict[str, tuple[int, int] | None]) -> None:
        with self._lock:
            if generation == self._generation:
                self._totals = totals
                self._terms.update(found)


class LazySnapshot:
    """A search's reads of the file as of the memo's generation; stands in for the cursor (``execute``).

    No transaction: each statement runs alone on one cursor lent for the search (DuckDB runs a statement outside a
    transaction in a snapshot of its own, taken when it starts), and is checked against the clock once it has run —
    no write began to commit since the memo's generation, so it saw exactly the state the memo describes, and so
    did every statement before it: together they read one state, as in one snapshot, without the BEGIN, the pinning
    read and the COMMIT a transaction costs (3 round trips of the ~6 statements after a write). If a write began to
    commit, it raises SnapshotMoved before the caller used what it read."""

    def __init__(self, lend: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]], clock: WriteClock,
                 generation: int) -> None:
        self.generation = generation
        self._lend = lend
        self._clock = clock
        self._lent: AbstractContextManager[duckdb.DuckDBPyConnection] | None = None
        self._cursor: duckdb.DuckDBPyConnection | None = None

    def read(self, statement: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        """``statement(cursor)`` as of the memo's generation (SnapshotMoved otherwise)."""
        if self._cursor is None:
            self._lent = self._lend()
            self._cursor = self._lent.__enter__()
        try:
            value = statement(self._cursor)
        except duckdb.Error as error:
            raise translate(error, "store operation failed") from error
        if not self._clock.still(self.generation):
            raise SnapshotMoved("a write committed while this search read the file")
        return value

    def execute(self, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        """One statement as of the memo's generation; its result is fetched afterwards from the statement's own
        snapshot."""
        return self.read(lambda cursor: cursor.execute(*args, **kwargs))

    def close(self, error: BaseException | None) -> None:
        """Give the cursor back (closed rather than reused when the search failed)."""
        lent, self._lent, self._cursor = self._lent, None, None
        if lent is not None:
            kind: type[BaseException] | None = type(error) if error is not None else None
            traceback: TracebackType | None = error.__traceback__ if error is not None else None
            lent.__exit__(kind, error, traceback)
