"""The embedding reranker (pcmem's policy, inside PowerContext's rerank seam): order the coarse pool by cosine to the
query.

It only selects positions: the coarse pool comes from the contract's retrieval, the reranker sorts it by cosine
between the query and each candidate under one embedder and keeps the first ``limit`` ranks (never pads, never
invents an identity; ties keep coarse order).

Which embedder:

* by default the store's own embedder — the candidates' vectors are already stored under its profile, so the only
  cost is one query embedding (vectors are read through the storage port, ``stored_vectors``);
* or a second, stronger embedder (e.g. EmbeddingGemma over a MiniLM store). When it is the store's *secondary*
  profile (``pcmem reindex --rerank-embedder``; writes keep it filled) its vectors are read from the store like the
  store's own. Otherwise candidates are embedded on first sight and kept in an in-process cache keyed by (profile,
  entry version id) — an entry version's text never changes, so a cached vector is never stale.

A candidate whose vector is missing (a version written by a runtime without that embedder, or while a reindex is
pending) is embedded the same way: reads never write to the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from pcmem.embedding.port import Embedder
from pcmem.embedding.vector_lru import VectorLRU
from pcmem.errors import EmbeddingError, InputError, RerankError
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.progress import Progress
from pcmem.types.rerank import MemoryRerankDecision
from pcmem.types.search import MemoryHit

POLICY_ID = "pcmem.memory.rerank.embedding.v1"
#: Reads the vectors a store holds under a profile: (profile, entry version ids) -> {id: vector}; missing ids absent.
VectorLookup = Callable[[EmbeddingProfile, Sequence[str]], Mapping[str, np.ndarray]]
CACHE_SIZE = 50_000  # vectors kept per reranker (768-d float32: ~150 MB at most)


class EmbeddingReranker:
    """Cosine rerank of the coarse pool. ``embedder=None`` means "the store's own", filled in by :meth:`bind`."""

    policy_id = POLICY_ID

    def __init__(self, embedder: Embedder | None = None, *, vectors: VectorLookup | None = None,
                 cache_size: int = CACHE_SIZE) -> None:
        self.embedder = embedder
        self._vectors = vectors
        self._cache = VectorLRU(cache_size)  # by (profile, text digest)

    @property
    def second_embedder(self) -> Embedder | None:
        """See :class:`~pcmem.rerank.port.SecondEmbedderReranker`: the embedder given, else ``None`` (the store's)."""
        return self.embedder

    def bind(self, default_embedder: Embedder | None, vectors: VectorLookup) -> EmbeddingReranker:
        """This policy for one store: its vector lookup, and ``default_embedder`` (the runtime's rerank embedder, else
        the store's own) unless this reranker was given its own."""
        bound = EmbeddingReranker(self.embedder or default_embedder, vectors=vectors)
        bound._cache = self._cache  # the cache is keyed by profile: safe to share
        return bound

    def rerank(self, query: str, candidates: Sequence[MemoryHit], limit: int,
               progress: Progress | None = None) -> MemoryRerankDecision:
        if limit < 1:
            raise InputError(f"rerank limit must be at least 1, got {limit}")
        embedder = self.embedder
        if embedder is None:
            raise RerankError("the embedding reranker has no embedder: the store has none and no second embedder "
                              "was chosen (pass --rerank-embedder PRESET)")
        limit = min(limit, len(candidates))
        try:
            query_vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
            matrix = self._candidate_vectors(embedder, candidates, progress)
        except EmbeddingError as error:
            raise RerankError(f"the embedding reranker failed ({embedder.profile.describe()}): {error}") from error
        scores = matrix @ query_vector
        if not embedder.profile.normalized:
            norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query_vector)), 1e-12)
            scores = scores / np.maximum(norms, 1e-12)
        order = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), i))  # ties: coarse order
        return MemoryRerankDecision(selected_ranks=tuple(i + 1 for i in order[:limit]),
                                    embedder=embedder.profile.describe(),
                                    cosines=tuple(float(score) for score in scores))

    def _candidate_vectors(self, embedder: Embedder, candidates: Sequence[MemoryHit],
                           progress: Progress | None) -> np.ndarray:
        profile = embedder.profile
        ids = [c.citation.entry_version_id for c in candidates]
        keys = [(profile, _text_key(c.text)) for c in candidates]
        found: dict[str, np.ndarray] = {}
        for version_id, key in zip(ids, keys):
            cached = self._cache.get(key)
            if cached is not None:
                found[version_id] = cached
        wanted = [i for i in ids if i not in found]
        if wanted and self._vectors is not None:
            found.update(self._vectors(profile, wanted))  # empty unless the store keeps this profile's vectors
        missing = {key: c.text for i, key, c in zip(ids, keys, candidates) if i not in found}  # one per distinct text
        if missing:
            computed = embedder.embed_documents(list(missing.values()), progress)
            vectors = dict(zip(missing, (np.asarray(v, dtype=np.float32) for v in computed)))
            for key, vector in vectors.items():
                self._cache.put(key, vector)
            for version_id, key in zip(ids, keys):
                if version_id not in found:
                    found[version_id] = vectors[key]
        return np.stack([np.asarray(found[i], dtype=np.float32) for i in ids])


def _text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
