"""Every Python block of README.md runs, on its own, as written (issue 18: the README's examples are tests).

Each block runs in a fresh interpreter in an empty folder, so it cannot lean on another block's imports or data.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S | re.M)


def _needs(block: str) -> str | None:
    """Why a block cannot run here, or None."""
    if "http://127.0.0.1:8765" in block:
        return "a client of `pcmem serve`: tests/test_serve_readme.py runs it against a live server"
    if "seekdb:" in block:
        try:
            import pylibseekdb  # noqa: F401
            import pyseekdb  # noqa: F401
        except ImportError:
            return "pyseekdb is not installed"
    if "llama-cpp:" in block:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            return "llama-cpp-python is not installed"
    return None


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(block: str, tmp_path: Path) -> None:
    reason = _needs(block)
    if reason:
        pytest.skip(reason)
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-3000:]}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if "forget" in b and not _needs(b)])
def test_readme_examples_that_forget_run_twice_in_a_row(block: str, tmp_path: Path) -> None:
    """Issue 29: the second run meets the keys the first one forgot, and writes them again as new entries."""
    for run in (1, 2):
        result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"run {run}:\n{result.stdout}\n{result.stderr[-3000:]}"
