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
