"""Store targets: a path opens the DuckDB file, a ``seekdb:`` URL the seekdb backend; the CLI takes either."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcmem.cli import main
from pcmem.compose.backends import open_backend
from pcmem.errors import ConfigurationError, InputError
from pcmem.store.duckdb import DuckDBBackend
from pcmem.store.seekdb.connector import SeekdbTarget, parse

ROOT = Path(__file__).resolve().parents[2]


def test_embedded_urls_name_a_data_directory_and_a_database(tmp_path):
    assert parse(f"seekdb://{tmp_path}") == SeekdbTarget(database="pcmem", path=tmp_path)
    assert parse(f"seekdb://{tmp_path}?database=team_a").database == "team_a"
    assert parse("seekdb:relative/dir").path == Path("relative/dir").resolve()


def test_server_urls_carry_login_tenant_and_database():
    target = parse("seekdb://app:s%40cret@ob.example.com:2883/memory?tenant=prod")
    assert (target.host, target.port, target.user, target.password, target.tenant, target.database) == (
        "ob.example.com", 2883, "app", "s@cret", "prod", "memory")
    assert not target.embedded and "s@cret" not in target.describe()
    assert parse("seekdb://ob.example.com/memory").tenant == "sys" and parse("seekdb://h/memory").port == 2881
    proxied = parse("seekdb://app%40prod%23cluster1:pw@proxy:2883/memory")  # OBProxy login: user@tenant#cluster
    assert (proxied.user, proxied.tenant) == ("app@prod#cluster1", None)


@pytest.mark.parametrize("url", ["seekdb:", "seekdb://h/bad-name", "seekdb:///tmp/x?colour=red", "seekdb://h:99999/db"])
def test_malformed_urls_are_input_errors(url):
    with pytest.raises(InputError):
        parse(url)


def test_a_path_opens_the_duckdb_file(tmp_path):
    backend = open_backend(tmp_path / "m.duckdb")
    assert isinstance(backend, DuckDBBackend)
    backend.close()
    with pytest.raises(InputError):
        open_backend("  ")


def test_without_pyseekdb_a_seekdb_url_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyseekdb", None)  # an import of it now fails
    with pytest.raises(ConfigurationError, match=r"pip install 'pcmem\[seekdb\]'"):
        open_backend(f"seekdb://{tmp_path}")


def test_one_embedded_directory_per_process(seekdb_url, tmp_path):
    open_backend(seekdb_url).close()  # the session's directory is open in this process now
    with pytest.raises(ConfigurationError, match="one process can open one embedded data directory"):
        open_backend(f"seekdb://{tmp_path / 'elsewhere'}")


def test_a_second_process_cannot_open_a_directory_in_use(seekdb_url):
    open_backend(seekdb_url).close()
    script = (f"from pcmem.store.seekdb import SeekdbBackend\n"
              f"from pcmem.errors import StoreError\n"
              f"try:\n    SeekdbBackend({seekdb_url!r}, lock_timeout=0.2)\n"
              f"except StoreError as e:\n    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert "refused:" in done.stdout and "in use by another process" in done.stdout, done.stderr


def test_the_cli_works_on_a_seekdb_store(seekdb_url):
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(main, ["--db", seekdb_url, *args], env={"PCMEM_DB": None})

    initialised = run("init", "--embedder", "minilm-l6-int8", "--json")
    assert initialised.exit_code == 0, initialised.output
    assert json.loads(initialised.stdout)["created"] is True
    assert json.loads(run("init", "--json").stdout)["created"] is False
    written = run("remember", "--scope", "team", "--kind", "decision", "We deploy on Fridays.", "--json")
    assert written.exit_code == 0, written.output
    found = json.loads(run("search", "--scope", "team", "--mode", "fts", "deploy friday", "--json").stdout)
    assert [hit["text"] for hit in found["hits"]] == ["We deploy on Fridays."]
    assert json.loads(run("where", "--json").stdout) == {"db": seekdb_url, "exists": True}
    checked = run("check")
    assert checked.exit_code == 6 and checked.stderr.startswith("pcmem: error: pcmem check works on DuckDB store files")
    env_run = runner.invoke(main, ["scopes", "--json"], env={"PCMEM_DB": seekdb_url})
    assert [s["scope"] for s in json.loads(env_run.stdout)] == ["team"]


# --- the backend registry: one table of URL schemes, one engine per name ------------------------------------------


def test_every_scheme_names_an_engine_that_claims_it():
    from pcmem.store.engine import StorageEngine
    from pcmem.store.engines import BUILT_IN, DEFAULT_SCHEME, engine_for, engine_named

    for scheme in BUILT_IN:
        engine = engine_for(f"{scheme}x")
        assert isinstance(engine, StorageEngine) and scheme in engine.schemes
        assert engine_named(engine.name) is engine
    assert engine_for("plain/path.duckdb") is engine_for(f"{DEFAULT_SCHEME}x")


@pytest.mark.parametrize("spelling", ["duckdb:{path}", "duckdb://{path}", "DuckDB:{path}", "duckdb://localhost{path}"])
def test_a_duckdb_url_opens_the_file_its_plain_path_names(tmp_path, spelling):
    import pcmem

    path = tmp_path / "m.duckdb"
    with pcmem.open(spelling.format(path=path), embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("We deploy on Fridays.")
    with pcmem.open(path, embedder=None) as runtime:
        assert [e.entry.text for e in runtime.memory.for_scope("s").list().entries] == ["We deploy on Fridays."]


def test_a_relative_duckdb_url_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    open_backend("duckdb:rel.duckdb").close()
    assert (tmp_path / "rel.duckdb").is_file()


@pytest.mark.parametrize("target", ["duckdb:", "duckdb://host/m.duckdb", "duckdb:s3://bucket/m.duckdb",
                                    "duckdb:///tmp/m.duckdb?mode=ro"])
def test_a_duckdb_url_that_names_no_local_file_is_refused(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError):
        open_backend(target)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["oceanbase://app:pw@ob.example:2881/memory?tenant=prod", "OceanBase:///data/ob"])
def test_an_oceanbase_url_is_a_seekdb_target(url):
    from pcmem.store.engines import engine_for

    assert engine_for(url).name == "seekdb" and not engine_for(url).single_file
    assert parse(url) == parse("seekdb" + url[len("oceanbase"):])


def test_an_oceanbase_url_opens_the_seekdb_engine(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyseekdb", None)  # an import of it now fails: only the seekdb engine needs it
    with pytest.raises(ConfigurationError, match=r"pip install 'pcmem\[seekdb\]'"):
        open_backend(f"oceanbase://{tmp_path}")


@pytest.mark.parametrize("target", ["postgres://db/memory", "mysql:memory", "md:my_db", "s3://bucket/m.duckdb"])
def test_an_unknown_scheme_is_a_one_line_error_listing_the_known_ones(tmp_path, monkeypatch, target):
    import pcmem
    from pcmem.errors import StoreSchemeError

    monkeypatch.chdir(tmp_path)
    for attempt in (lambda: open_backend(target), lambda: pcmem.open(target, embedder=None)):
        with pytest.raises(StoreSchemeError) as refused:
            attempt()
        message = str(refused.value)
        assert "\n" not in message and all(scheme in message for scheme in ("duckdb:", "seekdb:", "oceanbase:"))
    assert list(tmp_path.iterdir()) == []


def test_the_cli_names_the_known_schemes_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pcmem", "--db", "postgres://db/memory", "list", "--scope", "s"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "known schemes: duckdb:, seekdb:, oceanbase:" in done.stderr, done.stderr
