"""The architecture rules that are not imports (lint-imports checks those): configuration is read in one module."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT_READ = re.compile(r"os\.environ|os\.getenv|getenv\(|envvar=")


def test_only_the_settings_module_reads_the_environment():
    readers = sorted(str(path.relative_to(ROOT)) for folder in ("pcmem", "bench", "tui") for path in (ROOT / folder).rglob("*.py")
                     if ENVIRONMENT_READ.search(path.read_text()))
    assert readers == ["pcmem/settings.py"]
