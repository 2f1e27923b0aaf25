"""The wheel ships every package of the tree: pyproject lists them by hand (tui/ installs as pcmem_tui, bench/ as
pcmem_bench)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_lists_every_package_in_the_tree():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "pcmem").rglob("__init__.py")}
    for folder, package in (("tui", "pcmem_tui"), ("bench", "pcmem_bench")):
        on_disk |= {f"{package}." + ".".join(init.parent.relative_to(ROOT / folder).parts)
                    for init in (ROOT / folder).rglob("__init__.py")}
    on_disk = {name.rstrip(".") for name in on_disk}
    assert set(config["packages"]) == on_disk
    assert config["package-dir"] == {"pcmem_tui": "tui", "pcmem_bench": "bench"}


def test_the_wheel_declares_its_types():
    """PEP 561: py.typed ships as package data, so mypy/pyright use pcmem's annotations."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py.typed" in config["package-data"]["pcmem"]
    assert (ROOT / "pcmem" / "py.typed").is_file()
