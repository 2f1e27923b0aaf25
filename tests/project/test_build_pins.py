"""The toolchains that decide a built model's bytes are pinned in one place each, and the documented prepare steps
(docs/guides/embedding-models.md) run as written (the cheap ones are executed here; the steps that download large
files are checked, not run)."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from docs_pages import pages, section

from pcmem.cli import main
from pcmem.embedding.build import gemma, mpnet

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: Every page of the docs (README.md included): the extras they tell a user to install must exist.
DOCS = "\n".join(page.read_text(encoding="utf-8") for page in pages())


def test_the_mpnet_build_extra_pins_exactly_the_toolchain_the_code_checks() -> None:
    extra = set(PROJECT["optional-dependencies"]["mpnet-build"])
    assert extra == {f"{name}=={version}" for name, version in mpnet.BUILD_TOOLCHAIN.items()}
    assert set(mpnet.PINNED_MODEL_SHA256) == {"fp32", "int8"}


def test_the_runtime_onnxruntime_range_admits_the_one_the_models_were_built_and_checked_with() -> None:
    """The runtime takes a range (pcmem installs beside an app's own onnxruntime); the build pins one version, and a
    model built with it must run on an install of pcmem."""
    from packaging.requirements import Requirement

    (runtime,) = [Requirement(line) for line in PROJECT["dependencies"] if Requirement(line).name == "onnxruntime"]
    assert runtime.specifier.contains(mpnet.BUILD_TOOLCHAIN["onnxruntime"])
    assert f"onnxruntime=={mpnet.BUILD_TOOLCHAIN['onnxruntime']}" in PROJECT["optional-dependencies"]["mpnet-build"]


def _gemma_steps() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", section("docs/guides/embedding-models.md", "## EmbeddingGemma-300M"),
                      flags=re.S)
    assert block is not None
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_gemma_steps_install_the_sdist_build_backend_before_downloading_the_sdist() -> None:
    steps = _gemma_steps()
    download = next(i for i, step in enumerate(steps) if "--no-build-isolation" in step)
    installed: set[str] = set()
    for step in steps[:download]:
        for extra in re.findall(r"\.\[([\w-]+)\]", step):
            installed.update(PROJECT["optional-dependencies"][extra])
    assert any(requirement.startswith("scikit-build-core") for requirement in installed)
    assert steps[download].split("#")[0].split() == shlex.split(gemma.DOWNLOAD_SDIST.replace("DIR", "gemma-wheels"))


def test_every_extra_the_docs_install_exists() -> None:
    extras = set(re.findall(r"pip install [^\n]*?'\.\[([\w,-]+)\]'", DOCS))
    assert extras and all(name in PROJECT["optional-dependencies"] for group in extras for name in group.split(","))


def test_the_gemma_pcmem_steps_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Executed in an empty folder (no wheels downloaded): each gets as far as the missing model, never a usage
    error."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PCMEM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "gemma-wheels").mkdir()
    commands = [shlex.split(step)[1:] for step in _gemma_steps() if step.startswith("pcmem ")]
    assert len(commands) == 2
    prepare, reindex = (CliRunner().invoke(main, args) for args in commands)
    assert prepare.exit_code == 7 and "25 EmbeddingGemma transport wheels are missing" in prepare.output
    assert reindex.exit_code == 7 and "not prepared yet" in reindex.output
