"""An ONNX sentence-transformer directory the user supplies as ``--embedder DIR``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pcmem.embedding.onnx_embedder import OnnxEmbedder
from pcmem.embedding.port import Embedder
from pcmem.errors import ConfigurationError
from pcmem.model_files import is_intact, sha256_of
from pcmem.types.embedding import EmbeddingProfile


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
