from __future__ import annotations

from pathlib import Path

import pytest
from fakes import TickingClock
from syrupy.extensions.amber import AmberSnapshotExtension

import pcmem
from pcmem.testing import HashEmbedder

ROOT = Path(__file__).resolve().parent.parent


class RootSnapshotExtension(AmberSnapshotExtension):
    """Keep snapshots in the top-level ``snapshots/`` folder, one subfolder per test module."""

    @classmethod
    def dirname(cls, *, test_location) -> str:  # type: ignore[override]
        return str(ROOT / "snapshots" / Path(test_location.filepath).stem)


@pytest.fixture(autouse=True)
def _state_folder(tmp_path_factory, monkeypatch) -> Path:
    """The user's state folder (the TUI's search history) is a fresh one per test, never the developer's own."""
    folder = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    return folder


@pytest.fixture
def snapshot(snapshot):
    return snapshot.use_extension(RootSnapshotExtension)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.duckdb"


@pytest.fixture
def runtime(db_path: Path):
    with pcmem.open(db_path, clock=TickingClock()) as opened:
        yield opened


@pytest.fixture
def project(runtime):
    return runtime.memory.for_scope("project")


@pytest.fixture
def fake_embedder() -> HashEmbedder:
    return HashEmbedder()


# --- the seekdb backend ------------------------------------------------------------------------------------------
# Embedded seekdb allows one instance per process and each data directory costs ~190 MB, so the whole test session
# shares one directory and isolates stores by database name (each test drops its own).


def seekdb_available() -> bool:
    try:
        import pylibseekdb  # noqa: F401
        import pyseekdb  # noqa: F401
    except ImportError:
        return False
    return True


SEEKDB_SKIP_REASON = "pyseekdb/pylibseekdb is not installed (pip install 'pcmem[seekdb]')"


@pytest.fixture(scope="session")
def seekdb_dir(tmp_path_factory) -> Path:
    if not seekdb_available():
        pytest.skip(SEEKDB_SKIP_REASON)
    return tmp_path_factory.mktemp("seekdb")


@pytest.fixture
def seekdb_url(seekdb_dir: Path):
    """A fresh seekdb store (its own database in the session's embedded instance), dropped after the test."""
    import uuid

    url = f"seekdb://{seekdb_dir}?database=t_{uuid.uuid4().hex[:16]}"
    yield url
    from pcmem.store.seekdb.connector import Connector, parse

    Connector(parse(url)).drop_database()


@pytest.fixture(params=["duckdb", "seekdb"])
def backend(request, tmp_path):
    """A new store on each backend in turn, closed after the test: a DuckDB file, then a seekdb database."""
    if request.param == "duckdb":
        from pcmem.store.duckdb import DuckDBBackend

        opened = DuckDBBackend(tmp_path / "m.duckdb")
    else:
        from pcmem.store.seekdb import SeekdbBackend

        opened = SeekdbBackend(request.getfixturevalue("seekdb_url"))
    yield opened
    opened.close()


@pytest.fixture
def sequential_ids(monkeypatch):
    """Deterministic ids (``mem_000001``, ``ver_000002``, …) so snapshots can pin exact citations."""
    import itertools

    import pcmem.ids

    counter = itertools.count(1)

    def new_id(prefix: str) -> str:
        return f"{prefix}_{next(counter):06d}"

    for module in ("pcmem.ids", "pcmem.memory.scoped", "pcmem.memory.write_rules", "pcmem.store.common"):
        monkeypatch.setattr(f"{module}.new_id", new_id)
    return pcmem.ids


