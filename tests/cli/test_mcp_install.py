"""``pcmem mcp install`` / ``uninstall`` (#44 item 3): each host's file in its documented place and format, every other
byte kept, a backup, idempotence, refusals, and a real MCP client started from the written entry alone.

The fixtures in tests/data/mcp_hosts/ are shaped like each host's documentation examples (see pcmem.cli.mcp_hosts for
the pages). HOME points at a temporary folder, so no real host configuration is ever touched.
"""

from __future__ import annotations

import difflib
import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pcmem.cli import main
from pcmem.cli.mcp_hosts import HOSTS, Places

DATA = Path(__file__).parents[1] / "data" / "mcp_hosts"
#: Where each host keeps its user configuration on Linux, and its project file, as its documentation says.
USER_FILES = {
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "claude-code": ".claude.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".config/Code/User/mcp.json",
    "codex": ".codex/config.toml",
}
PROJECT_FILES = {"claude-code": ".mcp.json", "cursor": ".cursor/mcp.json", "vscode": ".vscode/mcp.json",
                 "codex": ".codex/config.toml"}
SERVERS_KEY = {"claude-desktop": "mcpServers", "claude-code": "mcpServers", "cursor": "mcpServers",
               "vscode": "servers", "codex": "mcp_servers"}
TYPED = {"claude-code", "vscode"}  # entries carry "type": "stdio" (VS Code requires it; `claude mcp add` writes it)


def fixture(host: str) -> Path:
    return DATA / (f"{host}.toml" if host == "codex" else f"{host}.json")


def parse(host: str, text: str) -> dict[str, Any]:
    if host == "codex":
        return tomllib.loads(text)
    return json.loads(text) if text.strip() else {}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def pcmem(home: Path, *args: str, store: Path | None = None) -> Result:
    env = {"HOME": str(home), "XDG_CONFIG_HOME": None, "APPDATA": None, "CODEX_HOME": None, "PCMEM_DB": None,
           "PCMEM_CACHE_DIR": None, "PCMEM_EMBEDDER": None, "XDG_RUNTIME_DIR": str(home)}  # set: never carried
    prefix = ["--db", str(store)] if store is not None else []
    return CliRunner().invoke(main, [*prefix, *args], env=env)


def install(home: Path, host: str, *args: str, store: Path | None = None) -> dict[str, Any]:
    result = pcmem(home, "mcp", "install", "--host", host, *args, "--json", store=store or home / "memory.duckdb")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def check_entry(host: str, entry: dict[str, Any], store: Path) -> None:
    """The entry as the host's documentation describes a stdio server, running this pcmem on ``store``."""
    assert Path(entry["command"]).is_absolute() and os.access(entry["command"], os.X_OK)
    assert entry["args"][-1] == "mcp"
    assert entry["env"]["PCMEM_DB"] == str(store)
    assert Path(entry["env"]["PCMEM_CACHE_DIR"]).is_absolute()
    assert "XDG_RUNTIME_DIR" not in entry["env"]  # owners are found from the file and the account, not from it
    assert (entry.get("type") == "stdio") == (host in TYPED)


@pytest.mark.parametrize("host", list(HOSTS))
@pytest.mark.parametrize("start", ["missing", "empty", "with other servers"])
def test_dry_run_shows_exactly_the_change_install_then_makes(home: Path, host: str, start: str) -> None:
    config = home / USER_FILES[host]
    original: bytes | None = None
    if start != "missing":
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_bytes(fixture(host).read_bytes() if start == "with other servers" else b"")
        original = config.read_bytes()
    before = parse(host, original.decode()) if original else {}

    planned = install(home, host, "--dry-run")
    assert planned["action"] == "added" and planned["written"] is False
    assert (config.read_bytes() if config.exists() else None) == original  # nothing written
    done = install(home, host)
    assert done["written"] is True and done["config"] == str(config)

    after_text = config.read_text()
    made = "".join(difflib.unified_diff((original or b"").decode().splitlines(keepends=True),
                                        after_text.splitlines(keepends=True),
                                        fromfile=str(config) if original is not None else "/dev/null",
                                        tofile=str(config)))
    assert planned["diff"] == made
    after = parse(host, after_text)
    servers = after[SERVERS_KEY[host]]
    check_entry(host, servers["pcmem"], home / "memory.duckdb")
    assert {key: value for key, value in servers.items() if key != "pcmem"} == before.get(SERVERS_KEY[host], {})
    assert {key: value for key, value in after.items() if key != SERVERS_KEY[host]} == \
           {key: value for key, value in before.items() if key != SERVERS_KEY[host]}


@pytest.mark.parametrize("host", list(PROJECT_FILES))
def test_project_scope_writes_the_projects_own_file(home: Path, tmp_path: Path, host: str) -> None:
    project = tmp_path / "app"
    project.mkdir()
    done = install(home, host, "--scope", "project", "--project", str(project))
    assert done["config"] == str(project / PROJECT_FILES[host])
    check_entry(host, parse(host, (project / PROJECT_FILES[host]).read_text())[SERVERS_KEY[host]]["pcmem"],
                home / "memory.duckdb")
    assert not (home / USER_FILES[host]).exists()


def test_claude_desktop_has_no_project_scope(home: Path) -> None:
    result = pcmem(home, "mcp", "install", "--host", "claude-desktop", "--scope", "project")
    assert result.exit_code == 2 and "no project configuration" in result.stderr


def test_each_host_user_file_on_macos_and_windows(tmp_path: Path) -> None:
    mac = Places("darwin", tmp_path, {})
    windows = Places("win32", tmp_path, {"APPDATA": str(tmp_path / "Roaming")})
    support = tmp_path / "Library" / "Application Support"
    assert HOSTS["claude-desktop"].user_file(mac) == support / "Claude" / "claude_desktop_config.json"
    assert HOSTS["claude-desktop"].user_file(windows) == tmp_path / "Roaming" / "Claude" / "claude_desktop_config.json"
    assert HOSTS["vscode"].user_file(mac) == support / "Code" / "User" / "mcp.json"
    assert HOSTS["vscode"].user_file(windows) == tmp_path / "Roaming" / "Code" / "User" / "mcp.json"
    assert HOSTS["codex"].user_file(Places("linux", tmp_path, {"CODEX_HOME": "/opt/codex"})) == \
           Path("/opt/codex/config.toml")


@pytest.mark.parametrize("host", list(HOSTS))
def test_install_then_uninstall_gives_back_the_same_bytes_and_keeps_backups(home: Path, host: str) -> None:
    config = home / USER_FILES[host]
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(fixture(host).read_bytes())
    config.chmod(0o640)
    original = config.read_bytes()

    added = install(home, host)
    assert stat.S_IMODE(config.stat().st_mode) == 0o640  # the host's file keeps its mode
    backup = Path(added["backup"])
    assert backup.parent == config.parent and backup.read_bytes() == original
    assert stat.S_IMODE(backup.stat().st_mode) == 0o640
    again = install(home, host)
    assert again["action"] == "unchanged" and again["backup"] is None and again["diff"] == ""

    removed = pcmem(home, "mcp", "uninstall", "--host", host, "--json")
    assert removed.exit_code == 0, removed.output
    assert json.loads(removed.stdout)["action"] == "removed"
    assert config.read_bytes() == original
    nothing = json.loads(pcmem(home, "mcp", "uninstall", "--host", host, "--json").stdout)
    assert nothing["action"] == "absent" and nothing["written"] is False


def test_a_new_store_updates_the_entry_in_place(home: Path) -> None:
    install(home, "cursor")
    moved = install(home, "cursor", store=home / "other.duckdb")
    assert moved["action"] == "updated"
    data = json.loads((home / USER_FILES["cursor"]).read_text())
    assert data["mcpServers"]["pcmem"]["env"]["PCMEM_DB"] == str(home / "other.duckdb")


@pytest.mark.parametrize(("host", "bad"), [("claude-desktop", "malformed.json"), ("vscode", "malformed-jsonc.json"),
                                           ("cursor", "malformed.json"), ("codex", "malformed.toml")])
@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_config_that_does_not_parse_is_refused_and_left_alone(home: Path, host: str, bad: str,
                                                                 command: str) -> None:
    config = home / USER_FILES[host]
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes((DATA / bad).read_bytes())
    result = pcmem(home, "mcp", command, "--host", host)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("pcmem: error: ") and result.stderr.count("\n") == 1
    assert ("not valid TOML" if host == "codex" else "not valid JSON") in result.stderr
    assert config.read_bytes() == (DATA / bad).read_bytes()
    assert sorted(path.name for path in config.parent.iterdir()) == [config.name]  # no backup, no temporary file


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_server_of_that_name_that_is_not_pcmem_is_left_alone(home: Path, command: str) -> None:
    config = home / USER_FILES["cursor"]
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('{"mcpServers": {"pcmem": {"command": "npx", "args": ["other-server"]}}}\n')
    result = pcmem(home, "mcp", command, "--host", "cursor")
    assert result.exit_code == 2 and "does not run `pcmem mcp`" in result.stderr
    assert json.loads(config.read_text())["mcpServers"]["pcmem"]["command"] == "npx"


def test_a_symlinked_config_is_written_through_its_link(home: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "mcp.json"
    dotfiles.parent.mkdir()
    dotfiles.write_bytes(fixture("cursor").read_bytes())
    link = home / USER_FILES["cursor"]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(dotfiles)
    install(home, "cursor", "--name", "memory")
    assert link.is_symlink()
    assert "memory" in json.loads(dotfiles.read_text())["mcpServers"]


def test_print_gives_the_entry_to_paste_and_changes_nothing(home: Path) -> None:
    result = pcmem(home, "mcp", "install", "--host", "codex", "--print", store=home / "m.duckdb")
    assert result.exit_code == 0, result.output
    check_entry("codex", tomllib.loads(result.stdout)["mcp_servers"]["pcmem"], home / "m.duckdb")
    assert not (home / ".codex").exists()


def test_a_bad_name_is_refused(home: Path) -> None:
    result = pcmem(home, "mcp", "install", "--host", "cursor", "--name", "my server")
    assert result.exit_code == 2 and "--name" in result.stderr


CLIENT = """
import asyncio, json, sys
from mcp import Client, StdioServerParameters

entry = json.loads(sys.argv[1])

async def main():
    server = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
    async with Client(server) as client:
        print(json.dumps(sorted(tool.name for tool in (await client.list_tools()).tools)))

asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.parametrize("host", ["claude-desktop", "codex"])
def test_a_real_mcp_client_started_from_the_written_entry_alone_lists_the_tools(home: Path, tmp_path: Path,
                                                                                 host: str) -> None:
    """The client process itself runs with an empty environment (``env -i``), so the server it starts gets the
    entry's ``env`` and nothing else: what a host with the most scrubbed environment would give it."""
    pytest.importorskip("mcp")
    store = tmp_path / "agent.duckdb"
    install(home, host, store=store)
    entry = parse(host, (home / USER_FILES[host]).read_text())[SERVERS_KEY[host]]["pcmem"]
    spec = {"command": entry["command"], "args": entry["args"], "env": entry["env"]}
    done = subprocess.run([sys.executable, "-c", CLIENT, json.dumps(spec)], env={}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {"search_memory", "remember_memory", "list_scopes"} <= set(json.loads(done.stdout))
    assert store.exists()  # the server opened the store the entry names


def test_without_a_pcmem_script_the_entry_runs_this_python_with_dash_m(tmp_path: Path) -> None:
    """An environment with no ``pcmem`` script beside its Python (pcmem run from a source tree, a zipapp): the entry
    runs this interpreter with ``-m pcmem``, unresolved (a virtual environment's python is a symlink to another)."""
    code = ("import sys, sysconfig; sysconfig.get_path = lambda name, *a, **k: '/nonexistent';"
            "from pcmem.cli.mcp_hosts import pcmem_launcher; print(repr(pcmem_launcher()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr((os.path.abspath(sys.executable), ["-m", "pcmem"]))
    runs = subprocess.run([os.path.abspath(sys.executable), "-m", "pcmem", "--version"], env={}, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert runs.returncode == 0 and "pcmem" in runs.stdout


def test_print_for_claude_code_also_names_its_own_command(home: Path) -> None:
    result = pcmem(home, "mcp", "install", "--host", "claude-code", "--print", store=home / "m.duckdb")
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["mcpServers"]["pcmem"]
    hint = result.stderr.strip().split(": ", 1)[1].split()
    assert hint[:8] == ["claude", "mcp", "add", "--transport", "stdio", "--scope", "user", "pcmem"]
    assert hint[hint.index("--") + 1:] == [entry["command"], *entry["args"]]
    assert f"PCMEM_DB={home / 'm.duckdb'}" in hint
