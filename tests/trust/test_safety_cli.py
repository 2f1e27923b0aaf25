"""Issue 16 at the command line: one-line typed errors with their own exit statuses, and nothing created by accident."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcmem.cli import main
from pcmem.errors import InputError, StoreLockedError, StoreMissingError, StoreWALError

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict | None = None, input: str | None = None):
    return CliRunner().invoke(main, list(args), env=env, input=input)


def one_line_error(result, exit_code: int) -> str:
    assert result.exit_code == exit_code, (result.exit_code, result.stdout, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcmem: error:"), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize("command", [
    ["list", "-s", "s"], ["show", "-s", "s", "e1"], ["search", "-s", "s", "q"], ["scopes"],
    ["history", "-s", "s", "e1"], ["changes", "-s", "s"], ["check"],
])
def test_read_commands_on_a_mistyped_path_create_nothing(tmp_path, command):
    path = tmp_path / "typo" / "m.duckdb"
    message = one_line_error(run("--db", str(path), *command), StoreMissingError.exit_code)
    assert f"no store at {path}" in message
    assert list(tmp_path.iterdir()) == []


def test_writes_create_the_store(tmp_path):
    path = tmp_path / "new" / "m.duckdb"
    assert run("--db", str(path), "remember", "-s", "s", "hello").exit_code == 0
    assert run("--db", str(path), "list", "-s", "s").exit_code == 0


@pytest.mark.parametrize("db", ["", "s3://bucket/m.duckdb", "http://example.com/m.duckdb", "md:mine", ":memory:"])
def test_targets_that_are_not_store_files_are_refused_in_one_line(tmp_path, monkeypatch, db):
    monkeypatch.chdir(tmp_path)
    result = run("--db", db, "remember", "-s", "s", "x")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert list(tmp_path.iterdir()) == []


def test_an_empty_environment_store_path_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("remember", "-s", "s", "x", env={"PCMEM_DB": ""})
    one_line_error(result, InputError.exit_code)


def test_a_failed_init_leaves_no_store(tmp_path):
    path = tmp_path / "m.duckdb"
    result = run("--db", str(path), "init", "--embedder", "/no/such/model/dir")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert not path.exists() and not Path(str(path) + ".wal").exists()


def test_a_damaged_log_exits_with_its_own_status(tmp_path):
    path = tmp_path / "m.duckdb"
    assert run("--db", str(path), "remember", "-s", "s", "x").exit_code == 0
    Path(str(path) + ".wal").write_bytes(b"\0" * 64)
    message = one_line_error(run("--db", str(path), "list", "-s", "s"), StoreWALError.exit_code)
    assert ".wal.damaged" in message


def test_a_store_held_by_another_process_exits_10_and_names_it(tmp_path):
    path = tmp_path / "m.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time, duckdb, pcmem
        pcmem.open(sys.argv[1], embedder=None).close()
        connection = duckdb.connect(sys.argv[1])  # holds the file without serving it (a pcmem owner would serve)
        print("holding", flush=True)
        time.sleep(60)
    """), str(path)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "holding"
        env = {"PCMEM_LOCK_TIMEOUT": "0.2"}
        message = one_line_error(run("--db", str(path), "list", "-s", "s", env=env), StoreLockedError.exit_code)
        assert f"process {holder.pid}" in message
    finally:
        holder.kill()
        holder.wait()


def test_a_plain_text_file_is_not_a_store(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("block of text, not a database\n")
    message = one_line_error(run("--db", str(path), "scopes"), 5)
    assert "not a DuckDB database file" in message


class WritesFromAnotherProcessWhileEmbedding:
    """An embedder that, while it embeds, has a second process write to the same store with a short lock timeout:
    the write succeeds only if the CLI does not hold the file while it embeds."""

    def __init__(self, path: Path) -> None:
        from fakes import HashEmbedder

        self.inner = HashEmbedder()
        self.profile = self.inner.profile
        self.path = path
        self.outcomes: list[str] = []

    def embed_documents(self, texts, progress=None):
        if len(texts) > 1:  # the import, not the query
            script = textwrap.dedent("""
                import sys, pcmem
                with pcmem.open(sys.argv[1], embedder=None, lock_timeout=1) as runtime:
                    print(runtime.memory.for_scope("other").head())
            """)
            done = subprocess.run([sys.executable, "-c", script, str(self.path)], capture_output=True, text=True,
                                  timeout=120, cwd=ROOT)
            self.outcomes.append(done.stderr.strip().splitlines()[-1] if done.returncode else "ok")
        return self.inner.embed_documents(texts, progress)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_import_embeds_before_it_takes_the_file(tmp_path, monkeypatch):
    import json

    from pcmem.compose import runtime as compose_runtime

    path = tmp_path / "m.duckdb"
    embedder = WritesFromAnotherProcessWhileEmbedding(path)
    monkeypatch.setattr(compose_runtime, "resolve_embedder", lambda choice, backend: embedder)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"text": f"note {i}"}) + "\n" for i in range(5)))
    assert run("--db", str(path), "remember", "-s", "s", "first").exit_code == 0
    result = run("--db", str(path), "import", "-s", "s", str(source))
    assert result.exit_code == 0, result.output
    assert embedder.outcomes == ["ok"]


# --- issue 26: usage errors and terminals that cannot show the text --------------------------------------------


def pcmem_process(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pcmem", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize(("args", "says"), [
    (["search"], "Missing argument 'QUERY'."),
    (["--bogus", "list"], "No such option '--bogus'."),
    (["list", "-s", "s", "--bogus"], "No such option '--bogus'."),
    (["nosuch"], "No such command 'nosuch'."),
    (["serve", "--port", "abc"], "Invalid value for '--port'"),
    (["search", "-s", "s", "--mode", "psychic", "q"], "Invalid value for '--mode'"),
    (["list"], "Missing option '--scope'"),
    (["--db", "", "list", "-s", "s"], "--db (or $PCMEM_DB) is empty"),
])
def test_usage_errors_are_one_line_with_exit_2(tmp_path, args, says):
    result = pcmem_process(*args, env={"PCMEM_DB": str(tmp_path / "m.duckdb")})
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcmem: error: ") and says in lines[0], result.stderr
    assert lines[0].endswith("--help'."), "the line says where to read more"


def test_an_ascii_terminal_gets_escapes_not_a_traceback(tmp_path):
    db = str(tmp_path / "m.duckdb")
    text = "Café über naïve — 東京 😀"
    ascii_env = {"PYTHONIOENCODING": "ascii"}
    written = pcmem_process("--db", db, "remember", "-s", "s", text, env=ascii_env)
    assert written.returncode == 0, written.stderr  # its "→ revision 1" line used to fail after the write
    entry_id = json.loads(pcmem_process("--db", db, "list", "-s", "s", "--json").stdout)["entries"][0]["entry"]["entry_id"]
    for command in (["list", "-s", "s"], ["scopes"], ["search", "-s", "s", "café"], ["show", "-s", "s", entry_id],
                    ["history", "-s", "s", entry_id]):
        result = pcmem_process("--db", db, *command, env=ascii_env)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (command, result.stderr)
        assert result.stdout.isascii(), command
    listed = pcmem_process("--db", db, "list", "-s", "s", env=ascii_env).stdout
    assert "Caf\\xe9 \\xfcber na\\xefve \\u2014 \\u6771\\u4eac \\U0001f600" in listed
