"""The wheel and the sdist are fit to depend on (issue 42): both pass ``twine check --strict`` and carry LICENSE; the
wheel declares its license as SPDX and leaves the benchmarks out; the sdist's own tests run from it once installed;
and the documentation's Python examples (README.md and docs/) type-check (a user's default mypy) against the installed
wheel's ``py.typed``.

Built once per run with ``python -m build``, the wheel from the sdist (its isolated environment takes setuptools
from the pip cache). Installs go into venvs of their own whose other packages are this environment's (a path line in a
``.pth`` file), so nothing is downloaded twice. ~1-2 minutes on 2 cores.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from docs_pages import blocks

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    # no --sdist/--wheel: the wheel is built from the sdist, so it holds only what the sdist does (an in-tree build
    # would pick up files a stale build/ folder still has)
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True, timeout=900)
    return {"wheel": next(out.glob("pcmem-*.whl")), "sdist": next(out.glob("pcmem-*.tar.gz"))}


def _venv(folder: Path, *installs: Path) -> Path:
    """A venv with ``installs`` (wheels or source folders, no dependencies) and this environment's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    *map(str, installs)], check=True, capture_output=True, text=True, timeout=900)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # A bare path: this environment's packages follow the venv's own; its .pth files (the editable pcmem) do not run.
    (Path(site) / "outer-environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def test_both_pass_twine_check(dists: dict[str, Path]) -> None:
    result = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(dists["wheel"]),
                             str(dists["sdist"])], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_the_wheel_carries_its_license_hooks_and_data_and_not_the_benchmarks(dists: dict[str, Path]) -> None:
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
        info = next(name.rsplit("/", 1)[0] for name in names if name.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        license_text = wheel.read(f"{info}/licenses/LICENSE").decode()
    assert license_text == (ROOT / "LICENSE").read_text() and "Apache License" in license_text
    assert metadata["License-Expression"] == "Apache-2.0" and metadata["License"] is None
    assert "tokenizers<1,>=0.15" in metadata.get_all("Requires-Dist")
    assert not [name for name in names if name.startswith("pcmem_bench")]
    assert {"pcmem/py.typed", "pcmem/pyinstaller/hook-pcmem.py", "pcmem_tui/app.tcss",
            "pcmem/embedding/data/all-MiniLM-L6-v2-tokenizer.json"} <= names
    assert "[pyinstaller40]\nhook-dirs = pcmem.pyinstaller:get_hook_dirs" in entry_points


def test_the_sdist_holds_what_its_tests_need(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"LICENSE", "MANIFEST.in", "tests/conftest.py", "tests/fakes.py", "tests/oracles.py", "tests/statement_log.py",
            "tests/data/powercontext-1.4.1-memory.json", "bench/pyproject.toml", "bench/cli.py", "mkdocs.yml",
            "docs/index.md", "docs/assets/tui-search.svg", "docsgen/hooks.py", "tests/docs_pages.py"} <= names
    snapshots = {path.relative_to(ROOT).as_posix() for path in (ROOT / "snapshots").rglob("*") if path.is_file()}
    assert snapshots and snapshots <= names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".duckdb")]


def test_the_sdists_tests_run_from_it(dists: dict[str, Path], tmp_path: Path) -> None:
    with tarfile.open(dists["sdist"]) as sdist:
        sdist.extractall(tmp_path, filter="data")
    unpacked = next(tmp_path.glob("pcmem-*"))
    python = _venv(tmp_path / "venv", unpacked, unpacked / "bench")
    # -P: the unpacked tree's pcmem is not imported in place of the installed one
    result = subprocess.run(
        [str(python), "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/store/test_fts_extension.py",
         "tests/api/test_validation.py", "tests/bench/test_bench_cli.py", "tests/search/test_search_filters.py",
         "-k", "not slow"],
        cwd=unpacked, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert re.search(r"\d+ passed", result.stdout) and "error" not in result.stdout.splitlines()[-1]
    located = subprocess.run([str(python), "-P", "-c", "import pcmem, pcmem_bench; print(pcmem.__file__, "
                              "pcmem_bench.__file__)"], cwd=unpacked, capture_output=True, text=True, check=True)
    assert str(tmp_path / "venv") in located.stdout.split()[0] and str(tmp_path / "venv") in located.stdout.split()[1]


def test_the_docs_python_examples_typecheck_against_the_installed_wheel(dists: dict[str, Path],
                                                                            tmp_path: Path) -> None:
    """As a user's mypy sees pcmem: default settings, the installed package's py.typed, no pydantic plugin."""
    python = _venv(tmp_path / "venv", dists["wheel"])
    files = []
    for number, block in enumerate(blocks("python")):
        (tmp_path / f"docs_block_{number}.py").write_text(block.code)
        files.append(f"docs_block_{number}.py")
    result = subprocess.run([sys.executable, "-m", "mypy", "--python-executable", str(python), "--no-incremental",
                             "--python-version", "3.11", *files], cwd=tmp_path, capture_output=True, text=True,
                            timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"no issues found in {len(files)} source files" in result.stdout
