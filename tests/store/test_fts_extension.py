"""DuckDB and its full-text-search extension must be a matching pair: pip keeps them so (duckdb-extension-fts==X
requires duckdb==X), and a pair mismatched by a forced install is refused when a store opens, in one line naming what
to install (it used to surface only when an index was built, as "install matching versions")."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import pcmem
from pcmem.store.duckdb import fts_extension
from pcmem.store.duckdb.fts_extension import pairing_problem


def _extension_built_for(root: Path, *versions: str) -> Path:
    for version in versions:
        folder = root / "extensions" / f"v{version}"
        folder.mkdir(parents=True)
        (folder / "fts.duckdb_extension").write_bytes(b"\0")
    return root


def test_the_installed_pair_matches() -> None:
    assert pairing_problem(duckdb.__version__, fts_extension._extension_folder()) is None
    assert fts_extension.fts_extension_path().is_file()


def test_an_extension_built_for_another_duckdb_names_the_extension_to_install(tmp_path: Path) -> None:
    problem = pairing_problem("1.5.5", _extension_built_for(tmp_path, "1.5.0"))
    assert problem is not None and "\n" not in problem
    assert "DuckDB 1.5.5 is installed" in problem and "built for DuckDB 1.5.0" in problem
    assert problem.endswith("pip install 'duckdb-extension-fts==1.5.5'")


def test_a_duckdb_outside_the_range_names_the_range(tmp_path: Path) -> None:
    for version in ("1.5.6", "1.4.4", "2.0.1", "1.5.6.dev12"):
        problem = pairing_problem(version, _extension_built_for(tmp_path / version, version))
        assert problem is not None
        assert f"DuckDB {version} is installed, but pcmem runs on duckdb 1.5.0 to 1.5.5" in problem
        assert "pip install 'duckdb>=1.5.0,<=1.5.5' 'duckdb-extension-fts>=1.5.0,<=1.5.5'" in problem


def test_a_missing_extension_names_the_package(tmp_path: Path) -> None:
    assert pairing_problem("1.5.5", None) == ("the DuckDB full-text-search extension is missing: "
                                              "pip install 'duckdb-extension-fts==1.5.5'")
    assert "holds no binary" in (pairing_problem("1.5.5", tmp_path) or "")


def test_opening_a_store_with_a_mismatched_pair_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the public API, on an existing store (whose reads never load the extension, so nothing else stops it)."""
    store = tmp_path / "memory.duckdb"
    with pcmem.open(store) as runtime:
        runtime.memory.for_scope("s").remember("Releases go out on Thursdays.")
    elsewhere = _extension_built_for(tmp_path / "fts", "1.4.4")
    monkeypatch.setattr(fts_extension, "_extension_folder", lambda: elsewhere)
    fts_extension._checked_path.cache_clear()
    try:
        with pytest.raises(pcmem.StoreError, match=r"built for DuckDB 1\.4\.4.*pip install 'duckdb-extension-fts=="):
            pcmem.open(store)
    finally:
        monkeypatch.undo()
        fts_extension._checked_path.cache_clear()
    with pcmem.open(store) as runtime:
        assert [hit.text for hit in runtime.memory.for_scope("s").search("releases").hits] == [
            "Releases go out on Thursdays."]
