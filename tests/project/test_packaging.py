"""The wheel ships every package of the tree: pyproject lists them by hand (tui/ installs as pcmem_tui); the
benchmarks (bench/) are a distribution of their own; the dependency ranges and the code that checks them agree."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_lists_every_package_in_the_tree():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "pcmem").rglob("__init__.py")}
    on_disk |= {f"pcmem_tui.{'.'.join(init.parent.relative_to(ROOT / 'tui').parts)}".rstrip(".")
                for init in (ROOT / "tui").rglob("__init__.py")}
    data_only = {name for name in config["package-data"] if not (ROOT / name.replace(".", "/") / "__init__.py").exists()
                 and name.startswith("pcmem.")}
    assert data_only == {"pcmem.embedding.data"}
    assert set(config["packages"]) == on_disk | data_only
    assert config["package-dir"] == {"pcmem_tui": "tui"}


def test_the_benchmarks_are_a_distribution_of_their_own():
    """An app that depends on pcmem does not get pcmem_bench; `pip install ./bench` from a checkout does."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert not [name for name in config["packages"] if name.startswith("pcmem_bench")]
    bench = tomllib.loads((ROOT / "bench" / "pyproject.toml").read_text())
    on_disk = {".".join(("pcmem_bench", *init.parent.relative_to(ROOT / "bench").parts))
               for init in (ROOT / "bench").rglob("__init__.py")
               if "build" not in init.relative_to(ROOT / "bench").parts}  # a non-editable build's copy
    assert set(bench["tool"]["setuptools"]["packages"]) == on_disk
    assert bench["project"]["version"] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_duckdb_and_its_fts_extension_carry_the_range_the_open_check_enforces():
    from packaging.requirements import Requirement

    from pcmem.store.duckdb.fts_extension import SUPPORTED_DUCKDB

    requirements = {Requirement(line).name: Requirement(line).specifier
                    for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    lowest, highest = (".".join(map(str, release)) for release in SUPPORTED_DUCKDB)
    for name in ("duckdb", "duckdb-extension-fts"):
        assert requirements[name].contains(lowest) and requirements[name].contains(highest)
        assert not requirements[name].contains(f"{SUPPORTED_DUCKDB[1][0]}.{SUPPORTED_DUCKDB[1][1]}.{SUPPORTED_DUCKDB[1][2] + 1}")
        assert not requirements[name].contains("1.4.4")
    assert str(requirements["duckdb"]) == str(requirements["duckdb-extension-fts"])


def test_the_wheel_declares_its_types():
    """PEP 561: py.typed ships as package data, so mypy/pyright use pcmem's annotations."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py.typed" in config["package-data"]["pcmem"]
    assert (ROOT / "pcmem" / "py.typed").is_file()
