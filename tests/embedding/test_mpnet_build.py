"""The real mpnet build (torch export + int8 quantisation, ~1-2 min, needs the mpnet parts and the
``mpnet-build`` extra). Opt in: ``PCMEM_TEST_MPNET=1 pytest -m mpnet``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from pcmem.embedding import mpnet_preset, presets
from pcmem.embedding.build import mpnet
from pcmem.embedding.build.prepare import prepare_preset

pytestmark = [
    pytest.mark.mpnet,
    pytest.mark.skipif(os.environ.get("PCMEM_TEST_MPNET") != "1", reason="opt in with PCMEM_TEST_MPNET=1"),
]

TEXTS = ["ok", "We deploy the desktop app every Thursday afternoon.",
         "[8 May 2023] Caroline: I went to a LGBTQ support group yesterday and it was so powerful." * 3,
         "Was hast du am Wochenende gemacht?", "The cat sat on the mat", "A kitten is resting on a rug"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mpnet-cache")


@pytest.mark.parametrize("name, variant", [("mpnet-base", "fp32"), ("mpnet-base-int8", "int8")])
def test_prepare_builds_verifies_and_is_idempotent(cache: Path, name: str, variant: str) -> None:
    stages: list[str] = []
    path = prepare_preset(name, lambda stage, done, total: stages.append(stage), cache)
    assert path == mpnet_preset.model_dir(variant, cache) and mpnet_preset.is_prepared(variant, cache)
    assert {"unpacking weights", "verifying weights", "exporting ONNX (torch)", "verifying against torch"} <= set(stages)
    manifest = json.loads((path / mpnet_preset.MANIFEST).read_text())
    assert manifest["source_sha256"] == mpnet_preset.SAFETENSORS_SHA256
    assert manifest["reference_cosine_min"] >= mpnet.MIN_REFERENCE_COSINE[variant]
    assert json.loads((path / "tokenizer_config.json").read_text()) == {"model_max_length": 384}
    started = time.perf_counter()
    assert prepare_preset(name, None, cache) == path
    assert time.perf_counter() - started < 10  # only re-verified
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".build-")]


@pytest.mark.parametrize("name", ["mpnet-base", "mpnet-base-int8"])
def test_vectors_do_not_depend_on_batch_neighbours(cache: Path, name: str) -> None:
    embedder = presets.preset_embedder(name, cache)
    together = embedder.embed_documents(TEXTS)
    alone = np.stack([embedder.embed_query(text) for text in TEXTS])
    assert together.shape == (len(TEXTS), 768)
    assert float(np.min(np.sum(together * alone, axis=1))) >= 0.999
    cat, kitten = together[4], together[5]
    assert float(cat @ kitten) > float(cat @ together[1]) + 0.2
