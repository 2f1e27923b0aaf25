"""Each shipped preset whose model bytes are pinned still computes the stored reference vectors (no download, no
torch): a new onnxruntime, tokenizers or llama.cpp that computes the same file differently fails here, in CI, instead
of silently moving new vectors away from a store's old ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcmem.embedding import gemma_preset, presets, reference
from pcmem.embedding.build import gemma, mpnet


def test_one_set_of_reference_texts_for_every_preset() -> None:
    package = Path(reference.__file__).parent
    defining = [path.name for path in package.glob("*.py") if "REFERENCE_SENTENCES = (" in path.read_text()]
    assert defining == ["reference.py"]
    assert mpnet.REFERENCE_SENTENCES is reference.REFERENCE_SENTENCES


@pytest.mark.parametrize("name", [name for name, preset in presets.EMBEDDER_PRESETS.items() if preset.reference_vectors])
def test_stored_reference_vectors_cover_the_reference_texts(name: str) -> None:
    preset = presets.EMBEDDER_PRESETS[name]
    assert preset.reference_vectors is not None
    stored = reference.stored_vectors(preset.reference_vectors)
    assert len(stored["documents"]) == len(reference.REFERENCE_SENTENCES)
    assert {len(row) for row in (*stored["documents"], stored["query"])} == {preset.profile.dimension}


def test_minilm_runtime_reproduces_its_reference_vectors(tmp_path: Path) -> None:
    preset = presets.EMBEDDER_PRESETS[presets.DEFAULT_PRESET]
    assert preset.reference_vectors is not None
    embedder = presets.preset_embedder(preset.name, tmp_path)
    # Measured 1.0 (to 2e-7) with onnxruntime 1.22.1 and 1.32.0; mpnet int8 moved to 0.991 between the same two.
    assert reference.agreement(embedder, preset.reference_vectors) >= 0.9999


def test_prepared_gemma_reproduces_its_reference_vectors() -> None:
    """Runs where EmbeddingGemma is prepared in the default cache (it needs a 1.2 GB download once)."""
    pytest.importorskip("llama_cpp")
    if not gemma_preset.is_prepared(presets.resolve_cache_dir(None)):
        pytest.skip("embeddinggemma-300m is not prepared here")
    assert gemma.verify(gemma_preset.verified_path(presets.resolve_cache_dir(None))) >= gemma.MIN_REFERENCE_COSINE


def test_the_batching_bench_compares_one_call_per_text_with_several() -> None:
    """``pcmem bench embed-batching`` (runs where EmbeddingGemma is prepared, like the test above)."""
    pytest.importorskip("llama_cpp")
    if not gemma_preset.is_prepared(presets.resolve_cache_dir(None)):
        pytest.skip("embeddinggemma-300m is not prepared here")
    from pcmem_bench import embed_batching

    result = embed_batching.run(["Ana moved the pottery class.", "Ben likes Thursdays.", "The build is green.",
                                 "Deploys go out on Fridays."], batch=2, rounds=2, threads=1)
    assert result["texts"] == 4 and result["one_per_call_cpu_ms_per_text"] > 0
    assert 0.99 < result["cosine_batched_vs_one_min"] <= 1.0 + 1e-6
    assert result["reference_agreement_one_per_call"] >= result["reference_bar"]
    assert [row["tokens"] for row in result["per_token_floor_one_thread"]] == sorted(
        row["tokens"] for row in result["per_token_floor_one_thread"])
