from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from syrupy.extensions.amber import AmberSnapshotExtension

import pcmem

ROOT = Path(__file__).resolve().parent.parent


class RootSnapshotExtension(AmberSnapshotExtension):
    """Keep snapshots in the top-level ``snapshots/`` folder, one subfolder per test module."""

    @classmethod
    def dirname(cls, *, test_location) -> str:  # type: ignore[override]
        return str(ROOT / "snapshots" / Path(test_location.filepath).stem)


@pytest.fixture
def snapshot(snapshot):
    return snapshot.use_extension(RootSnapshotExtension)


class TickingClock:
    """A deterministic clock: each call is one second after the previous one."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.duckdb"


@pytest.fixture
def runtime(db_path: Path):
    with pcmem.open_sync(db_path, clock=TickingClock()) as opened:
        yield opened


@pytest.fixture
def project(runtime):
    return runtime.memory.for_scope("project")


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
    from pcmem.store.seekdb.engine import Connector, parse

    Connector(parse(url)).drop_database()
