"""JSON lines files: how the fusion benchmarks keep what they fetched once, to evaluate it again without searching."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write(rows: Iterable[dict[str, Any]], path: str | Path) -> None:
    """One JSON document per line."""
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def read(path: str | Path) -> list[dict[str, Any]]:
    """The documents of a file :func:`write` made (blank lines skipped)."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
