"""mkdocs hooks: a page line ``<!-- generated: NAME -->`` is replaced by what the generator NAME makes from the code.

Loaded by mkdocs from mkdocs.yml (``hooks:``) by its path, so the repository root is put on ``sys.path`` first.
A generator that fails stops the build (strict mode) with its error.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docsgen import api_reference, cli_reference, http_reference, settings_reference, tools_reference  # noqa: E402

GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference.reference,
    "python-api": api_reference.reference,
    "mcp-tools": tools_reference.reference,
    "http-routes": http_reference.reference,
    "settings": settings_reference.reference,
}
MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", re.M)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: no generator named {name!r} (known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)
