"""Which embedder a runtime uses: an injected one, a preset, a model directory, or the store's own (``"auto"``)."""

from __future__ import annotations

from pcmem import settings
from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.errors import ConfigurationError, PcmemError
from pcmem.store.port import StorageBackend

#: ``"auto"`` (default): the embedder that made the store's vectors (a new store: ``$PCMEM_EMBEDDER``, else the
#: bundled ``minilm-l6-int8``); a preset name, a model directory or ``fastembed:MODEL`` (see
#: :mod:`pcmem.embedding.presets`); an :class:`Embedder`; or ``None``: full-text search only.
EmbedderChoice = Embedder | str | None


def resolve_embedder(choice: EmbedderChoice, backend: StorageBackend) -> Embedder | None:
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
    if choice in presets.EMBEDDER_PRESETS:
        preset = presets.EMBEDDER_PRESETS[choice]
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
