"""The TUI tests' fixtures: a seeded demo store copied per test, the app on it, and no developer settings or wall
clock leaking into screenshots."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from tui_pilot import FrozenClock, RootSVGExtension, open_store

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.cli.demo_command import seed_demo
from pcmem_tui.app import PcmemApp, make_app


@pytest.fixture
def svg_snapshot(snapshot):
    return snapshot.use_extension(RootSVGExtension)


@pytest.fixture(autouse=True)
def _no_model_from_the_environment(monkeypatch):
    """A developer's POWERCONTEXT_* variables must not change which rerank policies the UI offers."""
    for name in ("POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _status_bar_clock(monkeypatch):
    """The status bar's "read HH:MM:SS" is wall-clock time; fixed here so screenshots compare."""
    monkeypatch.setattr("pcmem_tui.freshness.clock", lambda: datetime(2026, 1, 1, 12, 0, 0))


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory) -> Path:
    """The demo scope (3 revisions: remember 18, revise release-day, retire sync-later) plus a small 'notes' scope."""
    path = tmp_path_factory.mktemp("template") / "memory.duckdb"
    with pcmem.open(path, embedder=None, clock=FrozenClock()) as runtime:
        seed_demo(runtime.memory.for_scope("pcmem-demo"))
        runtime.memory.for_scope("notes").remember(RememberRequest(entries=(
            NewEntry(entry_id="n1", text="Buy oolong tea for Marco."),
            NewEntry(entry_id="n2", text="Book the Porto venue.", kind="todo"),
        )))
    return path


@pytest.fixture
def store_path(seeded_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "memory.duckdb"
    shutil.copy(seeded_template, path)
    return path


@pytest.fixture
def runtime(store_path: Path) -> Iterator[pcmem.SyncRuntime]:
    with open_store(store_path) as opened:
        yield opened


@pytest.fixture
def app(runtime) -> PcmemApp:
    return make_app(runtime)
