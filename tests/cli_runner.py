"""Running the ``pcmem`` command line in-process through click's CliRunner, on a store file under a test's folder,
and reading its output back (``--json`` for data; stderr and the exit status for failures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from pcmem.cli import main

#: The scope the seeded stores write.
SCOPE = "p"


def store_path(tmp_path: Path) -> Path:
    return tmp_path / "m.duckdb"


def invoke(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    """Run ``pcmem ARGS`` in-process; PCMEM_DB is cleared unless ``env`` sets it (the real one never leaks in)."""
    merged: dict[str, str | None] = {"PCMEM_DB": None}
    merged.update(env or {})
    return CliRunner().invoke(main, args, env=merged)


def run(tmp_path: Path, *args: str) -> Result:
    """Run ``pcmem --db <tmp_path>/m.duckdb ARGS``."""
    return invoke(["--db", str(store_path(tmp_path)), *args])


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert "Traceback" not in result.output
    return result


def run_json(tmp_path: Path, *args: str) -> Any:
    """Run a command with ``--json``, require success and return the parsed document."""
    return json.loads(ok(run(tmp_path, *args, "--json")).stdout)


def assert_error(result: Result, exit_code: int) -> str:
    """The CLI's error contract: this exit status, one ``pcmem: error:`` stderr line, empty stdout, no traceback."""
    assert result.exit_code == exit_code, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    assert lines[0].startswith("pcmem: error: ")
    return lines[0]


def scopes(tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {summary["scope"]: summary for summary in run_json(tmp_path, "scopes")}


def head(tmp_path: Path, scope: str) -> int | None:
    summary = scopes(tmp_path).get(scope)
    return None if summary is None else summary["head_revision"]


def remember(tmp_path: Path, scope: str, text: str, *options: str) -> dict[str, Any]:
    return run_json(tmp_path, "remember", "--scope", scope, *options, text)


def entries_by_id(page: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["entry"]["entry_id"]: item for item in page["entries"]}


def citation_str(citation: dict[str, Any]) -> str:
    """The ``artifact@revision/entry/version`` form of a JSON citation (what ``str(Citation)`` prints)."""
    return f"{citation['artifact_id']}@{citation['revision']}/{citation['entry_id']}/{citation['entry_version_id']}"


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def jsonl(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False)


def store_bytes(tmp_path: Path) -> bytes:
    """The raw store file. A command that fails leaves it byte-for-byte unchanged (DuckDB rewrites nothing on a
    read or a rolled-back transaction), which is a cheaper and stricter check than listing the scope again."""
    return store_path(tmp_path).read_bytes()
