"""Which embedder a runtime uses: an injected one, a preset, a model directory, or the store's own (``"auto"``); and
likewise which second embedder its embedding reranker uses (the store's secondary profile under ``"auto"``)."""

from __future__ import annotations

from collections.abc import Callable

from pcmem import settings
from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.errors import ConfigurationError, InputError, PcmemError
from pcmem.store.port import VectorReads

#: ``"auto"`` (default): the embedder that made the store's vectors (a new store: ``$PCMEM_EMBEDDER``, else the
#: bundled ``minilm-l6-int8``); a preset name, a model directory or ``fastembed:MODEL`` (see
#: :mod:`pcmem.embedding.presets`); an :class:`Embedder`; or ``None``: full-text search only.
EmbedderChoice = Embedder | str | None


def check_embedder_choice(choice: object, name: str = "embedder") -> EmbedderChoice:
    """``choice`` when it is an :data:`EmbedderChoice`; else InputError naming ``name`` (an ``embedder=42`` would
    otherwise surface as an AttributeError at the first write)."""
    if choice is None or isinstance(choice, str):
        return choice
    if callable(getattr(choice, "embed_documents", None)) and callable(getattr(choice, "embed_query", None)):
        return choice  # type: ignore[return-value]
    raise InputError(f"{name} must be 'auto', a preset name, a model directory, an Embedder or None, "
                     f"got {type(choice).__name__}")


def resolve_embedder(choice: EmbedderChoice, backend: VectorReads) -> Embedder | None:
    choice = check_embedder_choice(choice)
    if choice is None or not isinstance(choice, str):
        return choice
    from pcmem.embedding import presets

    if choice == "auto":
        stored = backend.embedding_profile()
        if stored is None:
            choice = settings.new_store_embedder(presets.DEFAULT_PRESET)
        else:
            # Models load lazily: a store whose model is not prepared here still lists and reads; embedding raises
            # a ConfigurationError that says how to prepare it.
            return presets.for_profile(stored)
    return named_embedder(choice)


def named_embedder(choice: str) -> Embedder:
    """A preset (checked ready now, so a missing model is reported at startup), a model directory or
    ``fastembed:MODEL``."""
    from pcmem.embedding import presets

    if choice == "default":
        choice = presets.DEFAULT_PRESET
    preset = presets.find(choice)
    if preset is not None and not preset.retired:
        ready, _ = presets.preset_state(preset)
        if not ready:
            raise ConfigurationError(f"the embedder {choice} is not prepared yet: run `{preset.prepare_hint}`")
        return presets.shared(choice)
    return presets.resolve(choice)


def profile_embedder(profile: EmbeddingProfile) -> Embedder | None:
    """The embedder for a vector space the store switched to while a runtime was open (embedder="auto"): another
    runtime or process ran ``reindex --embedder``; a write then embeds with the store's new model."""
    from pcmem.embedding import presets

    try:
        return presets.for_profile(profile)
    except PcmemError:
        return None


def resolve_rerank_embedder(
    choice: EmbedderChoice, *, environment: bool = True,
) -> tuple[Embedder | None, Callable[[EmbeddingProfile], Embedder | None] | None]:
    """The embedding reranker's second embedder for a runtime, as (embedder, finder).

    An injected embedder, a preset or directory: that one, no finder. ``"none"``: neither. ``"auto"``:
    ``$PCMEM_RERANK_EMBEDDER`` when set, else no embedder yet and a finder: the runtime looks the store's secondary
    profile up when a write or an embedding rerank first needs it (nothing is read at open) and uses the matching
    model when it is prepared here. ``environment=False``: ``"auto"`` ignores this process's variable (an owner
    running a client's call, whose own variable was read in the client)."""
    choice = check_embedder_choice(choice, "rerank_embedder")
    if choice is None or not isinstance(choice, str):
        return choice, None
    if choice == "auto" and environment:
        choice = settings.rerank_embedder() or "auto"
    if choice == "none":
        return None, None
    if choice == "auto":
        return None, _ready_embedder
    return named_embedder(choice), None


def _ready_embedder(profile: EmbeddingProfile) -> Embedder | None:
    """The embedder of ``profile`` when its model is ready here; else ``None``: writes then leave the secondary vectors
    to ``pcmem reindex --rerank-embedder`` (``pcmem check`` counts them) instead of failing on a model not prepared."""
    from pcmem.embedding import presets

    preset = presets.for_model_id(profile.model_id)
    if preset is not None and not preset.retired and preset.profile == profile:
        return presets.shared(preset.name) if presets.looks_prepared(preset) else None
    return profile_embedder(profile)


def sent_by_name(choice: EmbedderChoice, name: str) -> str | None:
    """An embedder choice as a client sends it to the process that owns the store: ``"auto"``, ``None``/``"none"``,
    a preset name, a model directory (made absolute: the owner's working folder is another), or an Embedder object
    of one of pcmem's presets (by its name: the owner loads the same model). Any other object runs only in this
    process, so it is refused: ConfigurationError, saying what to do instead."""
    import os
    from pathlib import Path

    choice = check_embedder_choice(choice, name)
    if choice is None or isinstance(choice, str):
        if isinstance(choice, str) and choice not in ("auto", "none") and os.path.isdir(choice):
            return str(Path(choice).resolve())
        return choice
    from pcmem.embedding import presets

    preset = presets.for_model_id(choice.profile.model_id)  # a plugin's preset too: the owner finds it the same way
    if preset is not None and not preset.retired and preset.profile == choice.profile:
        return preset.name
    raise ConfigurationError(
        f"{name}={type(choice).__name__} is an object of this process, and another pcmem process holds the store and "
        f"embeds for it: pass {name}='auto' (the store's model), a preset name or a model directory, or open the "
        "store when that process has exited")
