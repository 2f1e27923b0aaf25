"""What every scope handle of one runtime shares: storage, the per-scope locks, the clock, the write gate and the
embedders (with the search service built on them)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from pcmem.embedding.port import Embedder
from pcmem.memory.clock import Clock, utc_now
from pcmem.memory.vectors import EmbedderFinder, EmbedderRoles, SearchFactory
from pcmem.store.port import Maintenance, RevisionLog, StoreSettings, VectorReads

if TYPE_CHECKING:
    from pcmem.memory.write_gate import WriteGate
    from pcmem.search.service import SearchService

class ScopeLocks:
    """One mutation lock per scope, shared by every handle on the same store."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def __call__(self, scope: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(scope, threading.Lock())


class MemoryStore(RevisionLog, VectorReads, Maintenance, StoreSettings, Protocol):
    """What the Memory services use of a store: its revision log, which vector spaces it keeps (the embedders), the
    reclaim that follows an erasure, and the defaults it keeps (the default fusion). Searching goes through the
    search service the composition root builds."""


class RuntimeShared:
    """What every scope handle of one runtime shares. ``search_for`` builds the search service for an embedder: the
    composition root passes it, so the reranker and candidate limit are decided there."""

    def __init__(
        self,
        backend: MemoryStore,
        search_for: SearchFactory,
        *,
        embedder: Embedder | None = None,
        clock: Clock = utc_now,
        locks: ScopeLocks | None = None,
        write_gate: WriteGate | None = None,
        embedder_for: EmbedderFinder | None = None,
        rerank_embedder: Embedder | None = None,
        rerank_embedder_for: EmbedderFinder | None = None,
    ) -> None:
        self.backend = backend
        self.clock = clock
        self.locks = locks or ScopeLocks()
        self.write_gate = write_gate
        self.embedders = EmbedderRoles(backend, search_for, embedder, embedder_for=embedder_for,
                                   rerank_embedder=rerank_embedder, rerank_embedder_for=rerank_embedder_for)

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this runtime writes and queries with."""
        return self.embedders.current.embedder

    @property
    def search(self) -> SearchService:
        """The search service of the current embedder."""
        return self.embedders.current.search

    @property
    def rerank_embedder(self) -> Embedder | None:
        """The embedding reranker's second embedder (see :class:`~pcmem.memory.vectors.EmbedderRoles`)."""
        return self.embedders.rerank_embedder

    def use_embedder(self, embedder: Embedder | None) -> None:
        """Switch every scope handle of this runtime to ``embedder`` (after the store switched vector space)."""
        self.embedders.use_embedder(embedder)

    def use_rerank_embedder(self, embedder: Embedder | None) -> None:
        """Fill (and rerank with) ``embedder``'s vectors from now on (after ``reindex --rerank-embedder``)."""
        self.embedders.use_rerank_embedder(embedder)
