"""Every example of the documentation works as written (issue 18: the README's examples are tests; issue 44: so are
the site's), on README.md and every page under docs/ (tests/docs_pages.py finds the blocks):

- each ``python`` block runs on its own, in a fresh interpreter in an empty folder, so it cannot lean on another
  block's imports or data; one that forgets runs twice in a row;
- each ``pcmem`` command of a ``bash`` block is parsed by the real click commands: the command exists, every option
  exists, every value converts (a file named as an argument need not exist here); so is every example in the
  commands' own ``--help``;
- a ``bash`` block marked ``<!-- run in a fresh store -->`` runs as written in an empty folder and home;
- each ``json`` block parses.

Blocks that need what this machine may lack are skipped with the reason; the serving examples run against a live
server in tests/serve/test_serve_docs.py.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from docs_pages import ROOT, RUN_MARKER, Block, blocks

PYTHON = blocks("python")
BASH = blocks("bash")
JSON = blocks("json")
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "<", ">", ">>", "2>"}


def _ids(found: list[Block]) -> list[str]:
    return [block.id for block in found]


def _needs(block: str) -> str | None:
    """Why a block cannot run here, or None."""
    if "http://127.0.0.1:8765" in block:
        return "a client of `pcmem serve`: tests/serve/test_serve_docs.py runs it against a live server"
    if "seekdb:" in block:
        try:
            import pylibseekdb  # noqa: F401
            import pyseekdb  # noqa: F401
        except ImportError:
            return "pyseekdb is not installed"
    if "llama-cpp:" in block:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            return "llama-cpp-python is not installed"
    return None


# --- python -----------------------------------------------------------------------------------------------------------


def test_the_docs_have_python_examples():
    assert len(PYTHON) >= 10 and {block.page for block in PYTHON} >= {
        "docs/getting-started/python.md", "docs/guides/agent-memory.md", "docs/guides/embedding-in-an-app.md"}


@pytest.mark.parametrize("block", PYTHON, ids=_ids(PYTHON))
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    reason = _needs(block.code)
    if reason:
        pytest.skip(reason)
    result = subprocess.run([sys.executable, "-c", block.code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, f"{block.id}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-3000:]}"


FORGETTING = [block for block in PYTHON if "forget" in block.code and not _needs(block.code)]


@pytest.mark.parametrize("block", FORGETTING, ids=_ids(FORGETTING))
def test_python_blocks_that_forget_run_twice_in_a_row(block: Block, tmp_path: Path) -> None:
    """Issue 29: the second run meets the keys the first one forgot, and writes them again as new entries."""
    for run in (1, 2):
        result = subprocess.run([sys.executable, "-c", block.code], cwd=tmp_path, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"{block.id} run {run}:\n{result.stdout}\n{result.stderr[-3000:]}"


# --- pcmem commands in bash blocks ------------------------------------------------------------------------------------


def pcmem_commands(script: str) -> list[list[str]]:
    """The argument lists of every ``pcmem`` command in a shell script (after ``VAR=value`` prefixes, in pipelines,
    ``&&`` chains and ``$(...)``), as the shell would split them; variables stay unexpanded."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split, lexer.commenters = True, "#"
        segment: list[str] = []
        for token in [*lexer, ";"]:
            if token not in _SEPARATORS and not set(token) <= set(";&|()<>"):
                segment.append(token)
                continue
            while segment and "=" in segment[0] and not segment[0].startswith("-"):
                segment.pop(0)  # VAR=value before the command
            if segment and segment[0] == "pcmem":
                commands.append(segment[1:])
            segment = []
    return commands


def parse(args: list[str]) -> None:
    """Parse ``pcmem ARGS`` as the CLI would, without running it; a usage error raises click's exception."""
    from pcmem.cli import main

    command: click.Command | None = main
    name, context = "pcmem", None
    while command is not None:
        try:
            context = click.Command.make_context(command, name, list(args), parent=context)
        except click.BadParameter as error:
            if isinstance(getattr(error.param, "type", None), click.Path | click.File) and "does not exist" in str(
                    error.message):
                return  # a file the example names (notes.jsonl) need not exist where the docs are checked
            raise
        except click.exceptions.Exit as stop:  # an eager option (--help, --version) ended the parse
            assert stop.exit_code == 0
            return
        if not isinstance(command, click.Group):
            return
        rest = [*getattr(context, "_protected_args", []), *context.args]
        if not rest:
            return
        name, command, args = command.resolve_command(context, rest)
        assert command is not None, f"no command {name!r}"


def test_the_command_splitter_finds_commands_in_pipes_chains_and_substitutions():
    script = ("A=1 pcmem --db x list --scope s | pcmem import -  # c\nx=$(pcmem search --scope s q) && echo \\\n"
              "  done; nice -n 10 pcmem scopes")
    assert pcmem_commands(script) == [["--db", "x", "list", "--scope", "s"], ["import", "-"],
                                      ["search", "--scope", "s", "q"]]


def test_an_unknown_option_or_command_in_an_example_is_caught():
    with pytest.raises(click.NoSuchOption):
        parse(["search", "--scope", "s", "--no-such-option", "q"])
    with pytest.raises(click.UsageError):
        parse(["no-such-command"])
    with pytest.raises(click.BadParameter):
        parse(["search", "--scope", "s", "--mode", "sideways", "q"])
    parse(["import", "--scope", "notes", "notes.jsonl"])  # a missing file is fine in an example


COMMANDS = [(block, args) for block in BASH for args in pcmem_commands(block.code)]


def test_the_docs_have_commands_to_check():
    assert len(COMMANDS) >= 80, len(COMMANDS)


@pytest.mark.parametrize(("block", "args"), COMMANDS, ids=[f"{block.id}:{' '.join(args)[:60]}" for block, args in COMMANDS])
def test_pcmem_command_in_a_bash_block_parses(block: Block, args: list[str]) -> None:
    parse(args)


sys.path.append(str(ROOT))  # docsgen (not installed), after every installed package
from docsgen.cli_reference import help_examples  # noqa: E402

HELP_EXAMPLES = help_examples()


@pytest.mark.parametrize(("where", "line"), HELP_EXAMPLES, ids=[line[:70] for _, line in HELP_EXAMPLES])
def test_every_example_in_a_commands_help_parses(where: str, line: str) -> None:
    commands = pcmem_commands(line)
    assert commands, f"{where}: no pcmem command in {line!r}"
    for args in commands:
        parse(args)


# --- bash blocks that run, and json blocks ----------------------------------------------------------------------------

RUNNABLE = [block for block in BASH if block.marker == RUN_MARKER]


def test_some_bash_blocks_run():
    assert "docs/getting-started/cli.md" in {block.page for block in RUNNABLE}


@pytest.mark.parametrize("block", RUNNABLE, ids=_ids(RUNNABLE))
def test_marked_bash_block_runs_in_a_fresh_store(block: Block, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PCMEM_", "POWERCONTEXT_", "XDG_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"),
               XDG_STATE_HOME=str(home / "state"), PATH=os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]]))
    (tmp_path / "work").mkdir()
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=tmp_path / "work", env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{block.id}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"


@pytest.mark.parametrize("block", JSON, ids=_ids(JSON))
def test_json_block_parses(block: Block) -> None:
    json.loads(block.code)
