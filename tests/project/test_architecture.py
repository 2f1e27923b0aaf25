"""The architecture rules that are not imports (lint-imports checks those): configuration is read in one module."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT_READ = re.compile(r"os\.environ|os\.getenv|getenv\(|envvar=")


def test_only_the_settings_module_reads_the_environment():
    """...and pcmem.offline, which sets what pcmem's dependencies read (it reads only to leave the user's values)."""
    readers = sorted(str(path.relative_to(ROOT)) for folder in ("pcmem", "bench", "tui") for path in (ROOT / folder).rglob("*.py")
                     if ENVIRONMENT_READ.search(path.read_text()))
    assert readers == ["pcmem/offline.py", "pcmem/settings.py"]


def test_no_import_cycle_between_modules_of_one_package():
    """Issue #27: modules of one package never import each other both ways (at run time; a type-checking import of
    a name is not a dependency). A cycle means one of them reaches into the other: pass collaborators instead."""
    import grimp

    cycles = []
    for package in ("pcmem", "pcmem_bench", "pcmem_tui"):
        graph = grimp.build_graph(package, include_external_packages=False, exclude_type_checking_imports=True)
        for module in graph.modules:
            for imported in graph.find_modules_directly_imported_by(module):
                same_package = module.rpartition(".")[0] == imported.rpartition(".")[0]
                if same_package and module < imported and module in graph.find_modules_directly_imported_by(imported):
                    cycles.append((module, imported))
    assert cycles == []
