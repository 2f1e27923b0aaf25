"""The embedders of one runtime, and the vectors a write stores with them.

The store's embedder and the search service built on it are one immutable :class:`EmbedderAndSearch`, replaced whole by one
assignment when the store switches vector space: a search running meanwhile uses the old pair or the new one, never
one embedder with the other's search service. Every method reads that value once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.errors import ConfigurationError
from pcmem.store.port import VectorReads, WriteTransaction

if TYPE_CHECKING:
    import numpy as np

    from pcmem.search.service import SearchService

#: Builds the search service for an embedder (the composition root decides the reranker and candidate limit); the
#: second argument answers the embedding policy's default second embedder at search time.
SearchFactory = Callable[[Embedder | None, Callable[[], Embedder | None]], "SearchService"]
EmbedderFinder = Callable[[EmbeddingProfile], Embedder | None]


@dataclass(frozen=True)
class Prepared:
    """Vectors computed before a write transaction, and the store profile they were computed for."""

    profile: EmbeddingProfile | None
    vectors: dict[str, np.ndarray]


NOTHING_PREPARED = Prepared(None, {})


@dataclass(frozen=True)
class EmbedderAndSearch:
    """The embedder this runtime writes and queries with, and the search service built on it."""

    embedder: Embedder | None
    search: SearchService


class EmbedderRoles:
    """The store's embedder (with its search service) and the embedding reranker's second embedder, for every scope
    handle of one runtime."""

    def __init__(
        self,
        backend: VectorReads,
        search_for: SearchFactory,
        embedder: Embedder | None = None,
        *,
        embedder_for: EmbedderFinder | None = None,
        rerank_embedder: Embedder | None = None,
        rerank_embedder_for: EmbedderFinder | None = None,
    ) -> None:
        self._backend = backend
        self._search_for = search_for
        #: Finds the embedder for a vector space the store switched to after this runtime opened (``None``: none).
        self.embedder_for = embedder_for
        #: The embedding reranker's second embedder: writes store its vectors when its profile is the store's
        #: secondary profile, and the embedding policy uses it when no embedder was chosen for that search.
        self.rerank_embedder = rerank_embedder
        #: Finds the embedder of the store's secondary profile when this runtime has none for it (``"auto"``); looked
        #: up on first need (a write, an embedding rerank), never at open.
        self.rerank_embedder_for = rerank_embedder_for
        self.current = EmbedderAndSearch(embedder, search_for(embedder, self.search_rerank_embedder))

    def use_embedder(self, embedder: Embedder | None) -> None:
        """Switch every scope handle of this runtime to ``embedder`` (after the store switched vector space)."""
        self.current = EmbedderAndSearch(embedder, self._search_for(embedder, self.search_rerank_embedder))  # one assignment

    def use_rerank_embedder(self, embedder: Embedder | None) -> None:
        """Fill (and rerank with) ``embedder``'s vectors from now on (after ``reindex --rerank-embedder``)."""
        self.rerank_embedder = embedder

    def secondary_embedder(self, current: EmbeddingProfile) -> Embedder | None:
        """The embedder of the store's secondary profile ``current``: this runtime's rerank embedder, or the one its
        finder gives (``"auto"``, which then becomes the runtime's); ``None`` when neither has that profile."""
        embedder = self.rerank_embedder
        if (embedder is None or embedder.profile != current) and self.rerank_embedder_for is not None:
            found = self.rerank_embedder_for(current)
            if found is not None:
                self.rerank_embedder = embedder = found
        return embedder if embedder is not None and embedder.profile == current else None

    def search_rerank_embedder(self) -> Embedder | None:
        """The embedding policy's default second embedder (the search service asks only for that policy)."""
        if self.rerank_embedder is None and self.rerank_embedder_for is not None:
            current = self._backend.secondary_embedding_profile()
            if current is not None:
                self.secondary_embedder(current)
        return self.rerank_embedder

    def secondary_for(self, texts_by_version: dict[str, str]) -> Prepared:
        """Second-embedder vectors for new versions, computed before the write transaction, when the store keeps that
        embedder's vectors (its secondary profile). :meth:`store_secondary` re-checks inside the transaction."""
        return _prepare(self.rerank_embedder, self._backend.secondary_embedding_profile, texts_by_version)

    def store_secondary(self, tx: WriteTransaction, texts_by_version: dict[str, str], prepared: Prepared) -> None:
        """Store the secondary vectors of the versions a write makes active, in the write's own transaction.

        Only when this runtime's rerank embedder (or under ``"auto"`` the prepared model of that profile) has the
        store's secondary profile, as the transaction sees it. A failing embedder fails the write (EmbeddingError),
        like the store's own embedder: an acknowledged write has its secondary vectors. A runtime with another or no
        such embedder stores none: ``pcmem reindex --rerank-embedder`` fills them, and until then the reranker
        embeds those candidates in process.
        """
        if not texts_by_version or (self.rerank_embedder is None and self.rerank_embedder_for is None):
            return  # no read: this runtime stores no secondary vectors
        current = tx.secondary_embedding_profile()
        embedder = None if current is None else self.secondary_embedder(current)
        if current is None or embedder is None:
            return
        vectors = {k: prepared.vectors[k] for k in texts_by_version if k in prepared.vectors} \
            if prepared.profile == current else {}
        missing = {k: texts_by_version[k] for k in texts_by_version if k not in vectors}
        if missing:
            vectors.update(_embed(embedder, missing))
        tx.store_secondary_vectors(current, vectors)

    def prepare_vectors(self, texts_by_version: dict[str, str]) -> Prepared:
        """Embed new versions when the store's vector space is the embedder's; else store none (reindex later).

        Runs before the write transaction (embedding is the slow part); :meth:`vectors_to_commit` re-checks the store's
        vector space inside it, because another runtime or process may have switched it meanwhile (so the space
        this reads may be the one the last write saw: a held store answers from the memo of its write generation).
        """
        return _prepare(self.current.embedder, self._backend.embedding_profile, texts_by_version)

    def vectors_to_commit(self, tx: WriteTransaction, texts_by_version: dict[str, str],
                       prepared: Prepared) -> dict[str, np.ndarray]:
        """The vectors to commit, decided inside the write transaction against the store's current vector space.

        A vector made for another profile is never stored (an ``reindex --embedder`` may have committed since it
        was computed): the texts are embedded again with the right model, or the write is refused with a typed
        error when this runtime has no embedder for the store's vectors.
        """
        current = tx.embedding_profile()
        if current is None or not texts_by_version:
            return {}
        if prepared.profile == current and len(prepared.vectors) == len(texts_by_version):
            return prepared.vectors
        mine = embedder = self.current.embedder
        if (embedder is None or embedder.profile != current) and self.embedder_for is not None:
            embedder = self.embedder_for(current)
            if embedder is not None:
                self.use_embedder(embedder)
        if embedder is None or embedder.profile != current:
            have = "no embedder" if mine is None else f"the embedder {mine.profile.describe()}"
            raise ConfigurationError(
                f"this runtime was opened with {have}, but the store's vectors are {current.describe()}: an entry "
                "written now would be missing from vector search. Open the store with embedder='auto' (the CLI "
                "does), or switch the store with `pcmem reindex --embedder ...`")
        return _embed(embedder, texts_by_version)


def _prepare(embedder: Embedder | None, store_profile: Callable[[], EmbeddingProfile | None],
             texts_by_version: dict[str, str]) -> Prepared:
    """``embedder``'s vectors for the texts when the store keeps that embedder's profile (read with
    ``store_profile``), else none; nothing is read when there is nothing to embed or no embedder."""
    if not texts_by_version or embedder is None:
        return NOTHING_PREPARED
    profile = store_profile()
    if profile != embedder.profile:
        return Prepared(profile, {})
    return Prepared(profile, _embed(embedder, texts_by_version))


def _embed(embedder: Embedder, texts_by_version: dict[str, str]) -> dict[str, np.ndarray]:
    ids = list(texts_by_version)
    matrix = embedder.embed_documents([texts_by_version[i] for i in ids])
    return dict(zip(ids, matrix, strict=True))
