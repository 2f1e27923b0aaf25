"""What every ``pcmem bench`` command does with its result before it prints its own tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pcmem.cli import render


def write_result(result: Any, out: str | None, as_json: bool, *, shown: Any = None) -> bool:
    """Write ``result`` as JSON to ``out`` when one is given; with ``--json`` print it (or ``shown``, a smaller view
    of it) and return True, and the command prints nothing else."""
    if out:
        Path(out).write_text(json.dumps(result, indent=2))
    if as_json:
        render.emit_json(result if shown is None else shown)
    return as_json
