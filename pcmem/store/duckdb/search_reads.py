"""The search reads of the DuckDB backend: one snapshot per search, served from the memo of the store's last write
where it can be (:mod:`.generation_memo`), and the in-process views a search ranks with (:mod:`.fts_cache`,
:mod:`.vector_cache`). A part of :class:`~pcmem.store.duckdb.backend.DuckDBBackend`, apart for its size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, cast

import duckdb

from pcmem.errors import SnapshotMoved, StoreError
from pcmem.store.common import CompletenessMemo, VersionCache, assemble_candidates, check_candidate_limit
from pcmem.store.duckdb import fts_direct, reads, vectors
from pcmem.store.duckdb.fts_cache import FtsCache, IndexStats, IndexTotals, read_index_terms, read_terms
from pcmem.store.duckdb.generation_memo import GenerationMemo, LazySnapshot
from pcmem.store.duckdb.transactions import CursorPool, Transactions
from pcmem.store.duckdb.vector_cache import VectorCache
from pcmem.store.port import is_searching_once
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import EntryVersion, MemoryRef
from pcmem.types.storage import ChannelCandidates, VectorStatus

if TYPE_CHECKING:
    import numpy as np


class SearchReads:
    """The search half of the backend: what the search service reads (see the module docstring)."""

    _snapshot: threading.local
    _transactions: Transactions
    _connections: CursorPool
    _transaction: Callable[..., AbstractContextManager[duckdb.DuckDBPyConnection]]
    _memo: GenerationMemo
    _complete: CompletenessMemo
    _versions: VersionCache
    _fts_cache: FtsCache
    _vector_cache: VectorCache

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One read snapshot for everything this thread reads inside the block (a search: mode check, candidates
        of every scope, their versions).

        The block reads what it can from the memo of the store's last write (:mod:`.generation_memo`; a
        warm search runs no statement) and opens a snapshot only for what the memo lacks; that may raise
        SnapshotMoved, and the thread's next block is a plain snapshot. A write of another thread under way does not
        stop it (only its COMMIT moves the memo's clock). A write committing, a transaction open on this thread (its
        own writes must be seen), or that retry: one transaction, heads and profile read once."""
        local = self._snapshot
        if getattr(local, "active", False):
            yield
            return
        if self._transactions.closed:  # the memo would still answer: a closed store answers nothing
            raise StoreError("the store is closed")
        plain = getattr(local, "plain", False) or self._transactions.in_transaction()
        generation = None if plain else self._memo.open()
        local.plain = False
        local.active = True
        try:
            if generation is None:
                with self._transaction():
                    local.heads = {}
                    yield
                return
            local.lazy = lazy = LazySnapshot(self._connections.cursor, self._transactions.clock,
                                             generation)
            try:
                yield
            except BaseException as error:
                if isinstance(error, SnapshotMoved):
                    local.plain = True
                lazy.close(error)
                raise
            lazy.close(None)
        finally:
            local.active, local.lazy, local.heads = False, None, None

    def _reader(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """Where a search's reads go: the open lazy snapshot (see :meth:`reading`), else a transaction."""
        lazy = getattr(self._snapshot, "lazy", None)
        return nullcontext(cast(duckdb.DuckDBPyConnection, lazy)) if lazy is not None else self._transaction()

    def _head_and_profile(self, cursor: duckdb.DuckDBPyConnection, scope: str
                          ) -> tuple[MemoryRef | None, EmbeddingProfile | None]:
        """The scope's head and the active profile (one statement), once per snapshot or per write generation."""
        lazy: LazySnapshot | None = getattr(self._snapshot, "lazy", None)
        if lazy is not None:
            found = self._memo.head(lazy.generation, scope)
            if found is None:  # after a write each searching thread misses it: one reads it, the others wait
                with self._memo.fills.lead_or_wait(f"head {scope}") as leading:
                    found = None if leading else self._memo.head(lazy.generation, scope)
                    if found is None:
                        found = lazy.read(lambda fresh: reads.head_and_profile(fresh, scope))
                        self._memo.remember_head(lazy.generation, scope, found)
            return found
        heads: dict | None = getattr(self._snapshot, "heads", None)
        if heads is not None and scope in heads:
            return heads[scope]
        found = reads.head_and_profile(cursor, scope)
        if heads is not None:
            heads[scope] = found
        return found

    def _index_stats(self, cursor: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> IndexStats | None:
        """BM25's statistics for ``terms``; the terms a memo of this write generation knows are not read again."""
        return IndexStats.of(*self._index_terms(cursor, terms))

    def _index_terms(self, cursor: duckdb.DuckDBPyConnection, terms: Sequence[str]
                     ) -> tuple[IndexTotals, Iterable[tuple[int, int] | None]]:
        """The index totals and each of ``terms``' (termid, df) or None (see :meth:`_index_stats`)."""
        lazy: LazySnapshot | None = getattr(self._snapshot, "lazy", None)
        distinct = list(dict.fromkeys(terms))
        if lazy is None:
            totals, found = read_index_terms(cursor, distinct)
            return totals, found.values()
        known, found, missing = self._memo.index_terms(lazy.generation, distinct)
        if known is None:  # the first search of a generation reads the totals; the others wait for them
            with self._memo.fills.lead_or_wait("totals") as leading:
                if not leading:
                    known, found, missing = self._memo.index_terms(lazy.generation, distinct)
                if known is None:
                    known, read = lazy.read(lambda fresh: read_index_terms(fresh, missing))
                    self._memo.remember_index_terms(lazy.generation, known, read)
                    found.update(read)
                    missing = []
        if missing:  # the totals stand still within a generation: only the new terms
            read = lazy.read(lambda fresh: read_terms(fresh, missing))
            self._memo.remember_index_terms(lazy.generation, known, read)
            found.update(read)
        return known, found.values()

    def vector_status(self, scope: str) -> VectorStatus:
        with self._reader() as cursor:
            memory, profile = self._head_and_profile(cursor, scope)
            if profile is None or memory is None:
                return VectorStatus(memory=memory, profile=profile, complete=profile is not None)
            key = (memory.artifact_id, memory.revision, profile)
            complete = self._complete.known_complete(key)
            if not complete:
                complete = vectors.complete(cursor, memory.artifact_id)
                if complete:
                    self._complete.remember_complete(key)
        return VectorStatus(memory=memory, profile=profile, complete=complete)

    def warm(self, scope: str, *, vectors: bool = True) -> bool:
        with self.reading(), self._reader() as cursor:
            memory, profile = self._head_and_profile(cursor, scope)
            if memory is None:
                return False
            self._fts_cache.load(cursor, memory, self._index_terms(cursor, ())[0][2])  # [2]: the index generation
            if vectors and profile is not None:
                self._vector_cache.load(cursor, memory, profile)
        return True

    def candidates(
        self, scope: str, *, fts_terms: Sequence[str] | None, query_vector: np.ndarray | None, limit: int,
        with_versions: bool = True,
    ) -> ChannelCandidates:
        check_candidate_limit(limit)
        with self._reader() as cursor:
            memory, profile = self._head_and_profile(cursor, scope)
            if memory is None:
                return ChannelCandidates(memory=None, fts=[], vector=[])
            fts = []
            if fts_terms:
                stats = self._index_stats(cursor, fts_terms)
                fts = [] if stats is None else (
                    fts_direct.search(cursor, memory, stats, limit) if is_searching_once()
                    else self._fts_cache.search(cursor, memory, stats, limit))
            vector = (
                self._vector_cache.search(cursor, memory, profile, query_vector, limit)
                if profile is not None and query_vector is not None else []
            )
            if not with_versions:
                return ChannelCandidates(memory=memory, fts=fts, vector=vector)
            return assemble_candidates(memory, fts, vector, lambda ids: self._page_versions(cursor, ids))

    def _page_versions(self, cursor: duckdb.DuckDBPyConnection, entry_version_ids: Sequence[str]
                       ) -> dict[str, EntryVersion]:
        """A search page's versions: cached ones from memory, the rest read in the search's snapshot."""
        found, missing = self._versions.split(entry_version_ids)
        if missing:
            lazy: LazySnapshot | None = getattr(self._snapshot, "lazy", None)
            # Versions are immutable (an erasure is a write, which moves the clock): one statement of its own will do
            read = (lazy.read(lambda fresh: reads.entry_versions(fresh, missing)) if lazy is not None
                    else reads.entry_versions(cursor, missing))
            self._versions.add(read)
            found.update(read)
        return found

    def entry_versions(self, entry_version_ids: Sequence[str]) -> dict[str, EntryVersion]:
        if not entry_version_ids:
            return {}
        if getattr(self._snapshot, "active", False):  # a search's page, in its reading() block: the search's reads
            with self._reader() as cursor:
                return self._page_versions(cursor, entry_version_ids)
        with self._transaction() as cursor:
            return reads.entry_versions(cursor, entry_version_ids)
