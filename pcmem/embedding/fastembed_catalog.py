"""Any model from fastembed's own catalogue, by name (``--embedder fastembed:BAAI/bge-small-en-v1.5``).

Thin on purpose, and the one embedder pcmem cannot exercise offline: fastembed downloads catalogue models into its
cache on first use, so this works only on a machine that can reach the model hub once (or whose fastembed cache
already holds the model), and, in pcmem's own commands, only with ``HF_HUB_OFFLINE=0`` set explicitly (they set it
to 1 otherwise: :mod:`pcmem.offline`). pcmem's presets and local directories never download.
"""

from __future__ import annotations

from typing import Any

from pcmem.embedding.onnx_embedder import OnnxEmbedder, fastembed_missing
from pcmem.errors import EmbeddingError, InputError
from pcmem.types.embedding import EmbeddingProfile


def _catalogue() -> dict[str, dict[str, Any]]:
    try:
        from fastembed import TextEmbedding
    except ImportError as exc:
        raise fastembed_missing() from exc
    return {m["model"].lower(): m for m in TextEmbedding.list_supported_models()}


def catalog_embedder(model_name: str, batch_size: int = 16) -> OnnxEmbedder:
    """A fastembed catalogue model; its profile is ``fastembed:<name>`` with the catalogue's dimension."""
    entry = _catalogue().get(model_name.lower())
    if entry is None or model_name.lower().startswith("pcmem/"):
        raise InputError(f"fastembed does not know the model {model_name!r} (see fastembed's supported models)")
    name = entry["model"]

    def load() -> Any:
        from fastembed import TextEmbedding

        try:
            return TextEmbedding(name, threads=1)
        except Exception as exc:
            raise EmbeddingError(f"fastembed could not load {name} (it downloads catalogue models on first use, "
                                 "which needs network access; pcmem's own commands run with HF_HUB_OFFLINE=1 unless "
                                 f"you set it: HF_HUB_OFFLINE=0 allows the download): {exc}") from exc

    # Catalogue models do not all normalise their output, so rows are rescaled to unit length here.
    return OnnxEmbedder(EmbeddingProfile(f"fastembed:{name}", int(entry["dim"]), True), load,
                        batch_size=batch_size, normalize=True)
