"""EmbeddingGemma preset plumbing that needs no model (the real build is the opt-in ``-m gemma`` test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pcmem.cli import main
from pcmem.compose.embedders import named_embedder
from pcmem.embedding import gemma_preset, presets
from pcmem.embedding.build import gemma
from pcmem.embedding.build.prepare import prepare_preset
from pcmem.embedding.reference import REFERENCE_SENTENCES, stored_vectors
from pcmem.errors import ConfigurationError


def test_pins_are_complete() -> None:
    assert len(gemma.WHEEL_SHA256) == len(gemma.WHEEL_VERSIONS) == 25 == len(set(gemma.WHEEL_SHA256))
    assert all(len(h) == 64 for h in (*gemma.WHEEL_SHA256, *gemma.PINNED_SOURCE_FILES.values(), gemma_preset.GGUF_SHA256))
    reference = stored_vectors(gemma_preset.REFERENCE_VECTORS)
    assert len(reference["documents"]) == len(REFERENCE_SENTENCES) and len(reference["query"]) == 768


def test_prepare_needs_the_terms_accepted_before_anything_else(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="Gemma Terms of Use"):
        prepare_preset(gemma_preset.NAME, None, tmp_path, wheel_dir=tmp_path)
    with pytest.raises(ConfigurationError, match="25 EmbeddingGemma transport wheels are missing"):
        prepare_preset(gemma_preset.NAME, None, tmp_path, wheel_dir=tmp_path, accept_terms=True)
    assert not gemma_preset.model_dir(tmp_path).exists()


def test_cli_shows_the_notice_and_an_unprepared_preset_says_how(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PCMEM_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["models", "prepare", gemma_preset.NAME, "--wheels", str(tmp_path)])
    assert result.exit_code != 0 and "Gemma Terms of Use" in result.output
    assert result.output.count("Gemma Terms of Use") == 1 and "pass --accept-gemma-terms" in result.output
    with pytest.raises(ConfigurationError, match="not prepared yet"):
        named_embedder(gemma_preset.NAME)
    ready, path = presets.preset_state(presets.EMBEDDER_PRESETS[gemma_preset.NAME])
    assert not ready and path == gemma_preset.model_dir(tmp_path / "cache")


def test_cli_with_the_terms_accepted_does_not_ask_for_the_flag(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PCMEM_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["models", "prepare", gemma_preset.NAME, "--accept-gemma-terms", "--wheels",
                                       str(tmp_path)])
    assert result.exit_code != 0 and "transport wheels are missing" in result.output
    assert "Gemma Terms of Use" in result.output and "accepted those terms" in result.output
    assert "pass --accept-gemma-terms" not in result.output


def test_llama_cpp_gets_one_thread_per_core_this_process_may_use(monkeypatch) -> None:
    """Issue #30: two threads on one allowed core wait on each other; the affinity, not the machine, decides."""
    import os
    import types

    loaded: dict = {}
    fake = types.SimpleNamespace(Llama=lambda **kwargs: loaded.update(kwargs) or object(),
                                 llama_print_system_info=lambda: b"AVX2 = 1")
    monkeypatch.setattr(gemma_preset, "require_llama_cpp", lambda needed_for: fake)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    gemma_preset.GemmaEmbedder(lambda: Path("model.gguf")).llama()
    assert loaded["n_threads"] == 1
    assert gemma_preset.GemmaEmbedder(lambda: Path("model.gguf"), 3).thread_count == 3  # an explicit count wins
