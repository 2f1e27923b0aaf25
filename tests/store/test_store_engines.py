"""Storage engines as the layers above the port see them: one object per engine, found by a target's URL scheme, and an
engine another package registers by entry point (as harlequin finds its adapters)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pcmem
from pcmem.errors import CapabilityNotSupportedError, ConfigurationError, StoreLockedError, StoreSchemeError
from pcmem.store import engines
from pcmem.store.engine import StorageEngine, StoreLocation

ROOT = Path(__file__).resolve().parents[2]

_TINY_ENGINE = '''
"""A storage engine of its own distribution: ``tiny:PATH`` stores, kept in a DuckDB file at PATH."""
import os
from pathlib import Path

from pcmem.store.duckdb.engine import DuckDBEngine
from pcmem.store.engine import StoreLocation


class TinyEngine(DuckDBEngine):
    name = "tiny"
    schemes = ("tiny:",)

    def locate(self, target):
        path = Path(os.path.realpath(os.fspath(target).removeprefix("tiny:")))
        return StoreLocation(self.name, f"tiny:{path}", path, target=f"tiny:{path}")


ENGINE = TinyEngine
'''


@pytest.fixture
def tiny_site(tmp_path: Path) -> Path:
    """A folder holding an installed distribution that registers the ``tiny:`` engine in ``pcmem.engines``."""
    site = tmp_path / "site"
    info = site / "tiny_engine-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "tiny_engine.py").write_text(_TINY_ENGINE)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-engine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pcmem.engines]\ntiny = tiny_engine:ENGINE\n")
    return site


def _run(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_an_engine_of_another_distribution_is_found_by_its_scheme(tiny_site, tmp_path):
    store = tmp_path / "notes.tiny"
    program = textwrap.dedent(f"""
        import pcmem
        from pcmem.store import engines
        with pcmem.open("tiny:{store}", embedder=None) as runtime:
            runtime.memory.for_scope("s").remember("We deploy on Fridays.")
        engine, location = engines.located("tiny:{store}")
        print(engine.name, location.shown, engine.exists(location), ",".join(engines.known_schemes()))
    """)
    done = _run(tiny_site, "-c", program, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tiny", f"tiny:{store}", "True", "duckdb:,seekdb:,oceanbase:,tiny:"]
    searched = _run(tiny_site, "-m", "pcmem", "--db", f"tiny:{store}", "search", "--scope", "s", "--mode", "fts",
                    "--json", "deploy", cwd=tmp_path)
    assert searched.returncode == 0 and "Fridays" in searched.stdout, searched.stderr
    with pcmem.open(store, embedder=None) as runtime:  # the same file, through the built-in engine
        assert [e.entry.text for e in runtime.memory.for_scope("s").list().entries] == ["We deploy on Fridays."]


def test_an_unknown_scheme_lists_the_installed_engines_too(tiny_site, tmp_path):
    done = _run(tiny_site, "-m", "pcmem", "--db", "postgres://db/memory", "list", "--scope", "s", cwd=tmp_path)
    assert done.returncode == StoreSchemeError.exit_code and done.stderr.count("\n") == 1, done.stderr
    assert "known schemes: duckdb:, seekdb:, oceanbase:, tiny:" in done.stderr, done.stderr


def test_pcmems_own_schemes_never_read_the_installed_distributions(monkeypatch, tmp_path):
    """Entry points are looked up for a scheme pcmem does not know only: reading every distribution's metadata would
    cost every command on a file or a seekdb URL."""
    import importlib.metadata

    def refuse(**_: object) -> None:
        raise AssertionError("entry points were read")

    monkeypatch.setattr(importlib.metadata, "entry_points", refuse)
    for target in (tmp_path / "m.duckdb", f"duckdb:{tmp_path}/m.duckdb", f"seekdb://{tmp_path}", "oceanbase://h/db"):
        engine, location = engines.located(target)
        assert isinstance(engine, StorageEngine) and engines.engine_for(location) is engine


def test_a_location_is_resolved_once_and_handed_back_as_it_is(tmp_path):
    link = tmp_path / "link.duckdb"
    link.symlink_to(tmp_path / "real.duckdb")
    engine, location = engines.located(link)
    assert (engine.name, location.path) == ("duckdb", tmp_path / "real.duckdb")
    assert engines.locate(location) is location and engines.engine_for(location) is engine
    with pcmem.open(location, embedder=None) as runtime:  # path-like: the open takes it without resolving again
        runtime.memory.for_scope("s").remember("kept")
    assert (tmp_path / "real.duckdb").is_file() and os.fspath(location) == str(tmp_path / "real.duckdb")


def test_who_holds_a_file_this_process_holds_is_answered_without_asking_the_system(tmp_path):
    engine, location = engines.located(tmp_path / "m.duckdb")
    assert not engine.held_here(location) and engine.holder(location) is None
    with pcmem.open(location, embedder=None):
        assert engine.held_here(location) and engine.holder(location) == os.getpid()
        with pytest.raises(StoreLockedError, match="open in this process"):
            engine.stage(location)  # probing would close a descriptor of the file: that drops this process's lock
    assert not engine.held_here(location) and engine.holder(location) is None


def test_what_a_database_engine_cannot_do_is_a_typed_refusal(tmp_path):
    engine, location = engines.located(f"seekdb://{tmp_path}/data")
    assert isinstance(location, StoreLocation) and location.path is None and not engine.single_file
    assert (engine.identity(location), engine.holder(location), engine.stage(location)) == (None, None, None)
    assert engine.leftover_log(location) is None and engine.damaged(location) is False
    for refused in (engine.recover_log, engine.health):
        with pytest.raises(CapabilityNotSupportedError):
            refused(location)


def test_a_password_never_shows_in_a_location(tmp_path):
    location = engines.locate("seekdb://app:s3cret@ob.example:2881/memory")
    assert "s3cret" not in location.shown and "s3cret" not in repr(location)
    assert "s3cret" in os.fspath(location)  # what names the store again, for a later open


def test_an_engine_that_cannot_be_imported_is_a_one_line_configuration_error(monkeypatch, tmp_path):
    """A bundle that left an engine's module out (PyInstaller sees no import statement for it), or a plugin whose
    module moved: a typed error naming the scheme and the module, not a ModuleNotFoundError traceback."""
    monkeypatch.setitem(engines.BUILT_IN, "nowhere:", "pcmem.store.nowhere.engine:ENGINE")
    with pytest.raises(ConfigurationError, match=r"'nowhere:' cannot be loaded from pcmem.store.nowhere.engine:ENGINE"):
        pcmem.open(f"nowhere:{tmp_path / 'x'}")
