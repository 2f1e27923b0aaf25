"""Help and ``--json`` on every command, and one-line answers.

End-to-end through click's CliRunner, each test on its own store file under ``tmp_path`` (helpers: tests/cli_runner.py;
seeded stores: tests/cli/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from cli_runner import (
    jsonl,
    ok,
    run,
    store_path,
    write_jsonl,
)
from click.testing import CliRunner

from pcmem.cli import main
from pcmem.cli.demo_data import DEMO_SCOPE

# --- 9. help and --json on every command ---------------------------------------------------------------------------


COMMANDS = main.list_commands(click.Context(main))  # commands load lazily: main.commands fills on use


def test_main_help_and_version_do_not_touch_a_store(tmp_path: Path) -> None:
    help_result = ok(run(tmp_path, "--help"))
    assert "Quick start" in help_result.stdout
    for name in COMMANDS:
        assert name in help_result.stdout
    version = ok(run(tmp_path, "--version"))
    assert version.stdout.startswith("pcmem, version ")
    assert not store_path(tmp_path).exists()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(tmp_path: Path, name: str) -> None:
    for flag in ("--help", "-h"):
        result = ok(run(tmp_path, name, flag))
        assert result.stdout.startswith(f"Usage: main {name} [OPTIONS]")
        assert "--json" in result.stdout
        if name != "where":
            assert "Example" in result.stdout
            assert f"pcmem {name}" in result.stdout.split("Example", 1)[1]
    assert not store_path(tmp_path).exists()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_declares_a_json_flag(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    flags = [p for p in command.params if isinstance(p, click.Option) and "--json" in p.opts]
    assert len(flags) == 1
    assert flags[0].is_flag
    assert flags[0].name == "as_json"


def _invocations(tmp_path: Path) -> dict[str, list[str]]:
    """One successful invocation of every command against the demo store."""
    source = write_jsonl(tmp_path / "more.jsonl", [jsonl({"text": "Imported."})])
    return {
        "remember": ["remember", "--scope", DEMO_SCOPE, "A new note."],
        "import": ["import", "--scope", DEMO_SCOPE, str(source)],
        "export": ["export", "--scope", DEMO_SCOPE, "--output", str(tmp_path / "exported.jsonl")],
        "context": ["context", "--scope", DEMO_SCOPE, "when do releases go out?"],
        "list": ["list", "--scope", DEMO_SCOPE],
        "show": ["show", "--scope", DEMO_SCOPE, "release-day"],
        "history": ["history", "--scope", DEMO_SCOPE, "release-day"],
        "changes": ["changes", "--scope", DEMO_SCOPE, "--since", "1"],
        "revise": ["revise", "--scope", DEMO_SCOPE, "release-owner", "Priya owns the checklist."],
        "retire": ["retire", "--scope", DEMO_SCOPE, "budget"],
        "reactivate": ["reactivate", "--scope", DEMO_SCOPE, "sync-later"],
        "forget": ["forget", "--scope", DEMO_SCOPE, "--yes", "font-choice"],
        "scopes": ["scopes"],
        "where": ["where"],
        "init": ["init"],
        "demo": ["demo"],
        "search": ["search", "--scope", DEMO_SCOPE, "when do releases go out?"],
        "reindex": ["reindex"],
        "models": ["models"],
        "fusion": ["fusion"],
        "bench": ["bench"],
        "check": ["check"],
        "doctor": ["doctor"],
        "tui": ["tui"],
        "serve": ["serve", "--port", "0", "--dry-run"],
        "mcp": ["mcp"],
        "migrate": ["migrate", "--from", str(store_path(tmp_path)), "--to", str(tmp_path / "copy.duckdb")],
    }


_READ_ONLY = ("list", "show", "history", "changes", "scopes", "where", "search", "models", "bench", "check",
              "fusion", "context", "export")


def test_every_command_runs_with_json_and_reads_run_without(tmp_path: Path, demo: dict[str, Any]) -> None:
    invocations = _invocations(tmp_path)
    assert set(invocations) == set(COMMANDS), "add an invocation for every registered command"
    for name in COMMANDS:
        result = run(tmp_path, *invocations[name], "--json")
        if not (name == "doctor" and result.exit_code == 1):  # doctor's documented "found a problem" (this process
            ok(result)  # may have loaded onnxruntime before pcmem could turn its telemetry off, for one)
        assert result.stderr == "", f"{name} wrote to stderr: {result.stderr!r}"
        assert isinstance(json.loads(result.stdout), (dict, list)), name
    for name in _READ_ONLY:
        result = ok(run(tmp_path, *invocations[name]))
        assert result.stdout.strip(), f"{name} printed nothing"
        with pytest.raises(json.JSONDecodeError):
            json.loads(result.stdout)


def test_a_search_that_finds_nothing_says_so_in_one_line(tmp_path):
    ok(run(tmp_path, "remember", "--scope", "s", "The team deploys on Fridays."))
    out = ok(run(tmp_path, "search", "--scope", "s", "--mode", "fts", "zebra")).stdout
    assert out.strip() == "no hits for 'zebra' in 's' @ revision 1 (mode fts): no entry passed admission (enough " \
        "query terms, or cosine ≥ 0.3)"


def test_changes_shows_the_reason_a_write_gave(tmp_path):
    """#29: a write's reason is kept with its revision; the CLI's changes table shows it when there is one."""
    import pcmem
    from pcmem import NewEntry, RememberRequest, RetireRequest

    db = tmp_path / "reasons.duckdb"
    with pcmem.open(db, embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        scope.remember(RememberRequest(entries=(NewEntry(entry_id="tea", text="Ana drinks tea."),)))
        scope.retire(RetireRequest(entry_id="tea", expected_version=1, reason="Ana said she stopped"))
    result = CliRunner().invoke(main, ["--db", str(db), "changes", "--scope", "s"])
    assert result.exit_code == 0, result.output
    assert "reason" in result.output and "Ana said she stopped" in result.output
