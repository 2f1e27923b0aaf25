"""Stand-ins for the parts a test is not about: a deterministic embedder, for pcmem's tests and for yours.

>>> import pcmem
>>> from pcmem.testing import HashEmbedder
>>> with pcmem.open("/tmp/test.duckdb", embedder=HashEmbedder()) as runtime:   # doctest: +SKIP
...     runtime.memory.for_scope("s").remember("no model is loaded for this")

A real embedder loads an ONNX or GGUF model (seconds, hundreds of MB); these vectors cost microseconds and are the
same on every machine, so a test of storage, search plumbing or concurrency stays fast and deterministic.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from pcmem.types.embedding import EmbeddingProfile

__all__ = ["HashEmbedder"]


class HashEmbedder:
    """Unit vectors from SHA-256, satisfying pcmem's embedder port.

    ``by="words"``: each lower-cased word adds a fixed pseudo-random direction, so texts that share words are
    similar (useful where a test needs the vector channel to rank). ``by="text"``: one pseudo-random direction per
    whole text (salted with the model id, so two profiles give different vectors). ``delay`` seconds per embedded
    document stand in for a model's cost (a crash test that must land mid-way). ``calls`` counts embedded texts.
    """

    def __init__(self, model_id: str = "test/hash-words", dimension: int = 64, *,
                 by: Literal["words", "text"] = "words", delay: float = 0.0) -> None:
        self.profile = EmbeddingProfile(model_id, dimension, True)
        self.by = by
        self.delay = delay
        self.calls = 0

    def vector(self, text: str) -> np.ndarray:
        if self.by == "text":
            return _unit(_direction(f"{self.profile.model_id}:{text}", self.profile.dimension))
        vector = np.zeros(self.profile.dimension, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            vector += _direction(word, self.profile.dimension)
        return _unit(vector)

    def embed_documents(self, texts: Sequence[str],
                        progress: Callable[[int, int], object] | None = None) -> np.ndarray:
        self.calls += len(texts)
        if self.delay:
            time.sleep(self.delay * len(texts))
        rows = (np.stack([self.vector(text) for text in texts]) if texts
                else np.empty((0, self.profile.dimension), np.float32))
        if progress is not None:
            progress(len(texts), len(texts))
        return rows

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector(text)


def _direction(seed_text: str, dimension: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm else vector
