from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
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
    with pcmem.open(db_path, clock=TickingClock()) as opened:
        yield opened


@pytest.fixture
def project(runtime):
    return runtime.memory.for_scope("project")


def TextHashEmbedder(dimension: int = 16, model_id: str = "test/hash") -> HashEmbedder:  # noqa: N802 - a class once
    """Deterministic unit vectors from the whole text's hash (the embedder is not what these tests are about)."""
    return HashEmbedder(model_id, dimension, by="text")


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


@contextlib.contextmanager
def read_only_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``path`` read-only (mode 0400) for the block, then writable again. Root ignores file modes, so there pcmem
    is made to see the file as another user would."""
    from pcmem.store.duckdb import files

    os.chmod(path, 0o400)
    if os.access(path, os.W_OK):
        monkeypatch.setattr(files, "writable", lambda _path: False)
    try:
        yield
    finally:
        os.chmod(path, 0o600)


def locomo_file(path):
    """A tiny locomo10.json-shaped file (one conversation, malformed evidence ids on purpose) at ``path``."""
    conversation = {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a beagle called Biscuit last week."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started pottery classes on Tuesdays."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Look at this.", "blip_caption": "a photo of a dog"},
        ],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery teacher moved the class to Thursdays."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Biscuit learned to sit yesterday."},
        ],
    }
    qa = [
        {"question": "What is the name of Ana's dog?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
        {"question": "When are Ben's pottery classes now?", "answer": "Thursdays", "evidence": ["D2:1; D1:2"],
         "category": 2},
        {"question": "What did Biscuit learn?", "answer": "to sit", "evidence": ["D:2:2", "D9:9"], "category": 1},
        {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
    ]
    path.write_text(json.dumps([{"sample_id": "t-1", "conversation": conversation, "qa": qa}]))
    return path
