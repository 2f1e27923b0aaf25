"""The reference pages say what the code does (issue 44): the lists are generated from the code while the site builds
(docsgen/), and what is written by hand beside them is held to the code here — the exit-status table to
pcmem.errors, the MCP tool table to the tool declarations, the environment table's source to what pcmem.settings
reads."""

from __future__ import annotations

import ast
import re
import sys

import pytest
from docs_pages import ROOT, page_text, section

import pcmem.errors
from pcmem import settings

sys.path.append(str(ROOT))  # docsgen (not installed), after every installed package

from docsgen import api_reference, cli_reference, settings_reference  # noqa: E402
from docsgen.hooks import GENERATORS, MARKER  # noqa: E402

# --- every marker names a generator, and each makes its page ------------------------------------------------------------


def test_every_generated_marker_in_the_docs_names_a_generator_and_each_generator_is_used():
    used = {name for page in (ROOT / "docs").rglob("*.md") for name in MARKER.findall(page.read_text("utf-8"))}
    assert used == set(GENERATORS)


def test_the_cli_reference_lists_every_command_with_its_options_and_exit_statuses():
    from pcmem.cli import main

    text = cli_reference.reference()
    paths = cli_reference.command_paths()
    assert {"pcmem mcp install", "pcmem mcp uninstall", "pcmem doctor", "pcmem models prepare",
            "pcmem fusion set"} <= set(paths)
    assert set(main.list_commands(None)) <= {path.split()[1] for path in paths}  # type: ignore[arg-type]
    for path in paths:
        assert re.search(rf"^#+ {re.escape(path)}$", text, re.M), path
    assert "`--dry-run`" in text and "`--host [claude-desktop|claude-code|cursor|vscode|codex]`" in text
    doctor = text[text.index("## pcmem doctor"):]
    assert "Exit status: 0 when done" in doctor and "1 when one" in doctor.split("\n## ")[0]


def test_the_settings_reference_names_every_variable_with_its_default():
    text = settings_reference.reference()
    for variable in settings.ENVIRONMENT:
        assert f"| `{variable.name}` |" in text
    assert "| `POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT` | `30` |" in text
    assert "(≥ 1, ≤ 100)" in text and "| `ORT_DISABLE_TELEMETRY` | `1` |" in text


def test_the_python_reference_has_a_directive_for_every_public_name():
    import pcmem

    text = api_reference.reference()
    for name in pcmem.__all__:
        assert re.search(rf"^::: [\w.]+\.{name}$", text, re.M), name


def test_the_mcp_and_http_references_come_from_the_served_tools_and_routes():
    pytest.importorskip("mcp")
    from docsgen import http_reference, tools_reference
    from pcmem.serve.tools import TOOL_NAMES

    tools = tools_reference.reference()
    assert [line[4:] for line in tools.splitlines() if line.startswith("### ")][1:] == list(TOOL_NAMES)
    routes = http_reference.route_list()
    assert {"POST /v1/memory/search", "POST /x/pcmem/tools/remember_memory", "GET /health/live"} <= set(routes)
    text = http_reference.reference()
    assert all(f"### {route} " in text for route in routes)


# --- what is written by hand, held to the code ------------------------------------------------------------------------


def _exit_rows() -> dict[int, set[str]]:
    rows = {}
    for line in page_text("docs/reference/exit-statuses.md").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].isdigit():
            rows[int(cells[0])] = set(re.findall(r"`([A-Z]\w*Error)`", cells[1]))
    return rows


def test_the_exit_status_table_names_each_error_class_with_its_status_and_every_status_pcmem_uses():
    rows = _exit_rows()
    classes = {cls.__name__: cls for cls in vars(pcmem.errors).values()
               if isinstance(cls, type) and issubclass(cls, pcmem.errors.PcmemError)}
    for code, names in rows.items():
        for name in names:
            assert name in classes, f"exit {code}: no error class {name}"
            assert classes[name].exit_code == code, f"{name} exits {classes[name].exit_code}, the table says {code}"
    assert {cls.exit_code for cls in classes.values() if cls is not pcmem.errors.PcmemError} <= set(rows)
    assert {0, 1, 2, 130} <= set(rows)


def test_the_mcp_tool_table_names_every_tool_in_order():
    from pcmem.serve.tools import TOOL_NAMES

    table = [re.match(r"\| `(\w+)` \|", line) for line in page_text("docs/reference/mcp-tools.md").splitlines()]
    assert [match.group(1) for match in table if match] == list(TOOL_NAMES)


def _environment_names_in_settings() -> set[str]:
    """Every variable name pcmem.settings spells out (the constants it reads the environment by)."""
    tree = ast.parse((ROOT / "pcmem" / "settings.py").read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(target, ast.Name) and "ENV" in target.id and target.id != "ENVIRONMENT"
               for target in targets) and node.value is not None:
            values = node.value.values if isinstance(node.value, ast.Dict) else [node.value]  # {field: variable}
            names |= {constant.value for value in values if value is not None for constant in ast.walk(value)
                      if isinstance(constant, ast.Constant) and isinstance(constant.value, str)}
    return names


def test_every_variable_pcmem_settings_reads_is_in_the_environment_table():
    declared = {variable.name for variable in settings.ENVIRONMENT}
    assert _environment_names_in_settings() == declared


def test_only_pcmem_settings_and_pcmem_offline_touch_the_environment():
    """So the table generated from pcmem.settings.ENVIRONMENT is the whole list (pcmem.offline's are "set by pcmem")."""
    readers = set()
    for path in [*(ROOT / "pcmem").rglob("*.py"), *(ROOT / "tui").rglob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv")
                    and isinstance(node.value, ast.Name) and node.value.id == "os"):
                readers.add(path.relative_to(ROOT).as_posix())
    assert readers == {"pcmem/settings.py", "pcmem/offline.py"}


# --- the README is the front page ---------------------------------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_short_front_page():
    assert len(README.splitlines()) < 150
    assert README.count("![") == 1 and "](docs/assets/tui-" in README


def test_the_quick_start_is_one_line_and_ci_runs_the_readmes_test_command_verbatim():
    [quick_start] = [block for block in re.findall(r"```bash\n(.*?)```", section("README.md", "## Quick start"), re.S)]
    assert quick_start.count("\n") == 1 and "pip install . && pcmem demo && pcmem search" in quick_start
    [test] = re.findall(r"```bash\n(.*?)```", section("README.md", "## Test"), re.S)
    create, activate, run = test.strip().split(" && ", 2)  # .ci/run makes and enters its venv first, then runs it
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert (create, activate, run) == ("python3 -m venv .venv", ". .venv/bin/activate", ci[-1])
    assert create in ci and activate in ci


def test_every_relative_link_of_the_readme_reaches_a_file():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 30
    assert not [link for link in local if not (ROOT / link).exists()]


def test_the_port_helper_names_what_an_old_readme_says_that_the_docs_do_not():
    from docsgen.moved import missing

    old = ("# pcmem\n\n## Offline\n\nNothing pcmem runs opens a network connection or resolves a name. A sentence the "
           "docs never held, long enough to count.\n\n```bash\npcmem doctor\npcmem frobnicate --all\n```\n")
    docs = "Nothing pcmem runs opens a network connection or resolves a name.\n```bash\npcmem doctor\n```"
    assert missing(old, docs) == [("Offline", "A sentence the docs never held, long enough to count."),
                                  ("Offline", "pcmem frobnicate --all")]
