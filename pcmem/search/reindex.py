"""Re-embedding: bring every active head entry into the configured embedder's vector space."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.store.port import StorageBackend

REINDEX_BATCH = 256


@dataclass(frozen=True)
class ReindexReport:
    profile: EmbeddingProfile
    previous_profile: EmbeddingProfile | None
    embedded: int
    seconds: float


def reindex(
    backend: StorageBackend,
    embedder: Embedder,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = REINDEX_BATCH,
) -> ReindexReport:
    """Adopt ``embedder.profile`` (dropping vectors of any other profile) and embed every version lacking a vector.

    Each batch commits on its own, so an interrupted reindex keeps its progress and the next run resumes.
    """
    started = time.perf_counter()
    previous = backend.embedding_profile()
    backend.set_embedding_profile(embedder.profile)
    total = backend.count_missing_vectors()
    done = 0
    if progress:
        progress(0, total)
    while batch := backend.versions_missing_vectors(batch_size):
        ids = [version_id for version_id, _ in batch]
        matrix = embedder.embed_documents([text for _, text in batch])
        backend.store_vectors(embedder.profile, dict(zip(ids, matrix, strict=True)))
        done += len(batch)
        if progress:
            progress(done, total)
    return ReindexReport(embedder.profile, previous, done, time.perf_counter() - started)
