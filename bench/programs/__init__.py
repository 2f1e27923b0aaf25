"""Programs the benchmarks and campaigns run as processes of their own: writers to SIGKILL, workers that race each
other, an app that holds a store, the floors a cold CLI call is measured against. Each is a real module, so ruff
and mypy check it, where it used to be a string handed to ``python -c``."""

from __future__ import annotations

import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


def command(program: str, *args: str) -> list[str]:
    """The argv that runs ``program`` (a module of this folder, by name) with ``args``.

    By path, not ``python -m``: like the ``python -c`` strings these replaced, a program imports nothing before its
    own first line — ``-m`` would import pcmem_bench (and with it pcmem) first, which the startup floors, measuring
    a bare interpreter plus DuckDB or onnxruntime, must not pay."""
    path = FOLDER / f"{program}.py"
    if not path.is_file():
        raise ValueError(f"no bench program named {program!r} in {FOLDER}")
    return [sys.executable, str(path), *args]
