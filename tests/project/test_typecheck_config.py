"""mypy's configuration: an import of a first-party module that does not exist fails the type check (a module moved
away once passed mypy because missing imports were ignored everywhere), and the packages installed under another
name than their folder (tui/ as pcmem_tui, bench/ as pcmem_bench) resolve for mypy."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = ("pcmem", "pcmem_bench", "pcmem_tui")


def _mypy(probe: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """mypy with the project's configuration on ``probe`` alone (imports not followed: resolving them is the point,
    checking the whole tree is CI's job and takes half a minute)."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--follow-imports=skip",
         "--cache-dir", str(cache), str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_an_import_of_a_missing_first_party_module_fails_mypy(tmp_path):
    existing = ["import pcmem.errors", "import pcmem_bench.tally", "import pcmem_tui.table"]
    missing = [f"import {package}.no_such_module" for package in FIRST_PARTY]
    probe = tmp_path / "probe.py"
    probe.write_text("\n".join(existing + missing) + "\n")
    result = _mypy(probe, tmp_path / "cache")
    assert result.returncode == 1, result.stdout + result.stderr
    failed_lines = {int(line.split(":")[1]) for line in result.stdout.splitlines() if ": error:" in line}
    assert failed_lines == {len(existing) + n for n in range(1, len(missing) + 1)}, result.stdout
    assert result.stdout.count("[import-not-found]") == len(missing), result.stdout


def test_only_third_party_packages_may_be_missing():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "ignore_missing_imports" not in config
    tolerated = [module for override in config["overrides"] if override.get("ignore_missing_imports")
                 for module in override["module"]]
    assert tolerated
    assert not [module for module in tolerated if module.split(".")[0] in FIRST_PARTY]


def test_mypy_sees_each_renamed_package_under_its_installed_name():
    """typecheck/<name> links to the folder setuptools installs as <name>; mypy checks the link."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    for package, folder in pyproject["setuptools"]["package-dir"].items():
        assert (ROOT / "typecheck" / package).resolve() == (ROOT / folder).resolve()
        assert f"typecheck/{package}" in pyproject["mypy"]["files"]
