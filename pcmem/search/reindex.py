"""Re-embedding: bring every active head entry into an embedder's vector space.

Switching embedders never leaves a store without a usable vector channel: the new profile is filled as a *pending*
profile next to the active vectors, batch by batch (each batch commits, so an interrupted run resumes where it
stopped), and becomes active in one transaction once every active entry has its new vector. Until then searches keep
using the old profile.

:func:`fill_secondary` fills the store's *secondary* profile the same way: a second embedder's vectors, kept for the
embedding reranker only (searches never use them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pcmem.embedding.port import Embedder
from pcmem.store.port import VectorProfiles
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.progress import Progress

REINDEX_BATCH = 256
#: Writes landing between the last batch and the switch are embedded and the switch retried this many times.
_SWITCH_ATTEMPTS = 5


@dataclass(frozen=True)
class ReindexReport:
    profile: EmbeddingProfile
    previous_profile: EmbeddingProfile | None
    embedded: int
    seconds: float
    switched: bool = False  # the active profile changed in this run


def reindex(
    backend: VectorProfiles,
    embedder: Embedder,
    *,
    progress: Progress | None = None,
    batch_size: int = REINDEX_BATCH,
) -> ReindexReport:
    """Embed every active head version lacking a vector under ``embedder.profile``, then make it the active profile.

    O(entries lacking a vector) embedding work: vectors a previous, interrupted run stored are kept.
    """
    started = time.perf_counter()
    target = embedder.profile
    previous = backend.embedding_profile()
    backend.begin_embedding_switch(target)
    done = 0
    total = backend.count_missing_vectors(target)
    if progress:
        progress(0, total)
    for _ in range(_SWITCH_ATTEMPTS):
        done, total = _embed_missing(backend, embedder, batch_size, progress, done, total)
        if previous == target or backend.commit_embedding_switch(target):
            break
    return ReindexReport(target, previous, done, time.perf_counter() - started,
                         switched=previous != target and backend.embedding_profile() == target)


def fill_secondary(
    backend: VectorProfiles,
    embedder: Embedder,
    *,
    progress: Progress | None = None,
    batch_size: int = REINDEX_BATCH,
) -> ReindexReport:
    """Make ``embedder.profile`` the store's secondary profile and embed every active head version lacking its vector.

    A different secondary profile is replaced (its vectors dropped); the same one keeps what is stored, so an
    interrupted run resumes (each batch commits). Searches and the active profile are untouched throughout.
    """
    started = time.perf_counter()
    target = embedder.profile
    previous = backend.secondary_embedding_profile()
    backend.set_secondary_embedding_profile(target)
    done = 0
    total = backend.count_missing_vectors(target)
    if progress:
        progress(0, total)
    done, _ = _embed_missing(backend, embedder, batch_size, progress, done, total)
    return ReindexReport(target, previous, done, time.perf_counter() - started, switched=previous != target)


def _embed_missing(backend: VectorProfiles, embedder: Embedder, batch_size: int, progress: Progress | None,
                   done: int, total: int) -> tuple[int, int]:
    """Embed and store, batch by batch (each batch commits, so an interrupted run resumes), every active head version
    lacking a vector under ``embedder.profile``; returns the (done, total) counts the progress shows."""
    target = embedder.profile
    while batch := backend.versions_missing_vectors(target, batch_size):
        ids = [version_id for version_id, _ in batch]
        matrix = embedder.embed_documents([text for _, text in batch])
        backend.store_vectors(target, dict(zip(ids, matrix, strict=True)))
        done += len(batch)
        total = max(total, done)
        if progress:
            progress(done, total)
    return done, total
