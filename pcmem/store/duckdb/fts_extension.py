"""The DuckDB full-text-search extension from PyPI, and the check that it fits the installed DuckDB.

``INSTALL fts`` would download from the network, which pcmem never does; the binary ships in the
``duckdb-extension-fts`` wheel, built for one DuckDB version (``extensions/v<version>/fts.duckdb_extension``), and
DuckDB refuses a binary built for another. pip always installs a matching pair (``duckdb-extension-fts==X`` requires
``duckdb==X``), so a mismatch comes from a forced install (``--no-deps``, a later ``pip install duckdb==…``, a lock file
edited by hand): it is refused when a store opens, with the command that fixes it, before DuckDB says something
obscure halfway through building an index.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

import duckdb

from pcmem.errors import StoreError

#: The DuckDB releases pcmem runs on, as pyproject.toml declares them (tests/project/test_packaging.py ties the two): from the
#: first that opens DuckDB's v1.5.0 storage format, which pcmem creates, to the newest the tests ran on. Each has its
#: duckdb-extension-fts on PyPI.
SUPPORTED_DUCKDB = ((1, 5, 0), (1, 5, 5))


def _release(version: str) -> tuple[int, ...]:
    """``(1, 5, 5)`` from ``"1.5.5"`` (or ``"1.5.6.dev12"``, ``"1.5.6-dev12"``)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def _dotted(release: tuple[int, ...]) -> str:
    return ".".join(map(str, release))


def _extension_folder() -> Path | None:
    """``duckdb_extension_fts``'s folder, found without importing it (its ``extensions/`` is all pcmem uses)."""
    spec = importlib.util.find_spec("duckdb_extension_fts")
    for root in (spec.submodule_search_locations or []) if spec else []:
        return Path(root)
    return None


def pairing_problem(duckdb_version: str, extension_root: Path | None) -> str | None:
    """Why the installed DuckDB and FTS extension cannot serve a store (one line naming what to install), or None."""
    lowest, highest = SUPPORTED_DUCKDB
    fix_range = f"pcmem runs on duckdb {_dotted(lowest)} to {_dotted(highest)}"
    if not lowest <= _release(duckdb_version) <= highest:
        return (f"DuckDB {duckdb_version} is installed, but {fix_range}: "
                f"pip install 'duckdb>={_dotted(lowest)},<={_dotted(highest)}' "
                f"'duckdb-extension-fts>={_dotted(lowest)},<={_dotted(highest)}'")
    if extension_root is None:
        return ("the DuckDB full-text-search extension is missing: "
                f"pip install 'duckdb-extension-fts=={duckdb_version}'")
    if (extension_root / "extensions" / f"v{duckdb_version}" / "fts.duckdb_extension").is_file():
        return None
    built_for = sorted(folder.name[1:] for folder in (extension_root / "extensions").glob("v*")
                       if (folder / "fts.duckdb_extension").is_file())
    if not built_for:
        return (f"the DuckDB full-text-search extension in {extension_root} holds no binary: "
                f"pip install --force-reinstall 'duckdb-extension-fts=={duckdb_version}'")
    # duckdb_version is in the range, and every release in it has its extension on PyPI
    return (f"DuckDB {duckdb_version} is installed, but its full-text-search extension (duckdb-extension-fts) is built "
            f"for DuckDB {', '.join(built_for)}, and DuckDB loads only an extension built for itself: "
            f"pip install 'duckdb-extension-fts=={duckdb_version}'")


@functools.cache
def _checked_path() -> Path:
    problem = pairing_problem(duckdb.__version__, _extension_folder())
    if problem is not None:
        raise StoreError(problem)
    root = _extension_folder()
    assert root is not None  # pairing_problem answered None: the folder exists
    return root / "extensions" / f"v{duckdb.__version__}" / "fts.duckdb_extension"


def fts_extension_path() -> Path:
    """The FTS extension binary for the installed DuckDB, or StoreError naming what to install (checked once per
    process: the installed packages do not change under a running program)."""
    return _checked_path()
