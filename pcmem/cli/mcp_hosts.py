"""The MCP hosts ``pcmem mcp install`` writes to: where each keeps its configuration, in which format, and the server
entry that starts this pcmem there.

Each host's location and format as its own documentation gives them:

- Claude Desktop: https://modelcontextprotocol.io/quickstart/user — ``claude_desktop_config.json`` in
  ``~/Library/Application Support/Claude`` (macOS) or ``%APPDATA%\\Claude`` (Windows), ``mcpServers`` →
  ``{command, args, env}``. Claude Desktop has no Linux release; community builds read ``~/.config/Claude``.
- Claude Code: https://code.claude.com/docs/en/mcp — scope ``user``: ``~/.claude.json``, top-level ``mcpServers``;
  scope ``project``: ``.mcp.json`` at the project root; entries ``{type: "stdio", command, args, env}`` as
  ``claude mcp add`` writes them.
- Cursor: https://cursor.com/docs/mcp — ``~/.cursor/mcp.json`` (every project) or ``.cursor/mcp.json`` (one
  project), ``mcpServers`` → ``{command, args, env}``.
- VS Code: https://code.visualstudio.com/docs/copilot/reference/mcp-configuration — ``.vscode/mcp.json`` in the
  workspace or ``mcp.json`` in the user profile (``Code/User`` under ``~/.config``, ``~/Library/Application
  Support`` or ``%APPDATA%``), ``servers`` → ``{type: "stdio", command, args, env}``.
- Codex: https://developers.openai.com/codex/mcp and /codex/config-reference — ``$CODEX_HOME/config.toml``
  (``~/.codex``) or ``.codex/config.toml`` in a trusted project, ``[mcp_servers.NAME]`` with ``command``, ``args``,
  ``env``.

Every host starts a stdio server with an environment of its own, not the user's shell's: Claude Desktop and the MCP
SDKs pass only HOME, LOGNAME, PATH, SHELL, TERM and USER; Codex a similar short list; editors launched from a dock
have no shell variables at all. So the entry carries what pcmem needs to find the same store, models and owner as the
user's terminal (:func:`server_environment`), and nothing secret.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pcmem.errors import InputError

Scope = Literal["user", "project"]
Format = Literal["json", "toml"]


@dataclass(frozen=True)
class Places:
    """Where a user's configuration folders are, on one platform (what the hosts' paths are made of)."""

    platform: str  # sys.platform
    home: Path
    environ: Mapping[str, str]  # the variables of settings.HOST_CONFIG_ENVS that are set

    def config_home(self) -> Path:
        return Path(self.environ.get("XDG_CONFIG_HOME") or self.home / ".config")

    def application_folder(self) -> Path:
        """Where desktop applications keep per-user settings: macOS' Application Support, Windows' roaming AppData,
        the XDG config folder elsewhere."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        if self.platform.startswith("win"):
            return Path(self.environ.get("APPDATA") or self.home / "AppData" / "Roaming")
        return self.config_home()

    def codex_home(self) -> Path:
        return Path(self.environ.get("CODEX_HOME") or self.home / ".codex")


@dataclass(frozen=True)
class Host:
    name: str
    title: str
    format: Format
    #: The keys from the top of the file down to the object (JSON) or table (TOML) holding the servers by name.
    servers: tuple[str, ...]
    #: Whether its stdio entries carry ``"type": "stdio"``.
    typed: bool
    user_file: Callable[[Places], Path]
    project_file: Callable[[Path], Path] | None
    #: What to do after a change so the host loads it.
    reload: str

    @property
    def scopes(self) -> tuple[Scope, ...]:
        return ("user", "project") if self.project_file is not None else ("user",)

    def config_file(self, scope: Scope, places: Places, project: Path) -> Path:
        if scope == "user":
            return self.user_file(places)
        if self.project_file is None:
            raise InputError(f"{self.title} has no project configuration; use --scope user")
        return self.project_file(project)

    def entry(self, command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
        head: dict[str, Any] = {"type": "stdio"} if self.typed else {}
        return {**head, "command": command, "args": args, "env": env}


HOSTS: dict[str, Host] = {host.name: host for host in (
    Host("claude-desktop", "Claude Desktop", "json", ("mcpServers",), typed=False,
         user_file=lambda p: p.application_folder() / "Claude" / "claude_desktop_config.json", project_file=None,
         reload="quit Claude Desktop completely and start it again"),
    Host("claude-code", "Claude Code", "json", ("mcpServers",), typed=True,
         user_file=lambda p: p.home / ".claude.json", project_file=lambda root: root / ".mcp.json",
         reload="start a new Claude Code session (/mcp lists the servers)"),
    Host("cursor", "Cursor", "json", ("mcpServers",), typed=False,
         user_file=lambda p: p.home / ".cursor" / "mcp.json", project_file=lambda root: root / ".cursor" / "mcp.json",
         reload="restart Cursor, or reload the server under Settings → MCP"),
    Host("vscode", "VS Code", "json", ("servers",), typed=True,
         user_file=lambda p: p.application_folder() / "Code" / "User" / "mcp.json",
         project_file=lambda root: root / ".vscode" / "mcp.json",
         reload="run 'MCP: List Servers' in VS Code and start pcmem"),
    Host("codex", "Codex", "toml", ("mcp_servers",), typed=False,
         user_file=lambda p: p.codex_home() / "config.toml", project_file=lambda root: root / ".codex" / "config.toml",
         reload="start a new Codex session (/mcp lists the servers)"),
)}


def host_named(name: str) -> Host:
    host = HOSTS.get(name)
    if host is None:
        raise InputError(f"unknown MCP host {name!r}; known: {', '.join(HOSTS)}")
    return host


def pcmem_launcher() -> tuple[str, list[str]]:
    """The absolute command that runs *this* pcmem, and the arguments before its own: the ``pcmem`` script of the
    environment pcmem is installed in (the one running now, or the one beside this Python), else this Python with
    ``-m pcmem``. Paths are made absolute but not resolved: a virtual environment's ``bin/python`` is a symlink to
    the base interpreter, and resolving it would leave the environment."""
    script_name = "pcmem.exe" if sys.platform.startswith("win") else "pcmem"
    running = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    candidates = [running] if running is not None and running.name == script_name else []
    candidates.append(Path(sysconfig.get_path("scripts")) / script_name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate), []
    return os.path.abspath(sys.executable), ["-m", "pcmem"]


def server_environment(store: str, cache: Path, *, embedder: str | None) -> dict[str, str]:
    """What the host's pcmem needs in its environment to share this terminal's store and models (its owner is found
    from the store file and the account, whatever the environment):

    - ``PCMEM_DB``: the store, as an absolute path (a host's working folder is anything), so every host and the
      terminal open one file;
    - ``PCMEM_CACHE_DIR``: where prepared models are (the default follows ``XDG_CACHE_HOME``, which hosts drop);
    - ``PCMEM_EMBEDDER``: only when set here — the embedder a store made by the host would get.
    """
    env = {"PCMEM_DB": store, "PCMEM_CACHE_DIR": str(cache)}
    if embedder:
        env["PCMEM_EMBEDDER"] = embedder
    return env


def is_pcmem_entry(entry: Any) -> bool:
    """Whether a server entry runs ``pcmem mcp`` (so install may replace it and uninstall may remove it)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args") or []
    if not isinstance(args, list) or "mcp" not in args:
        return False
    command = Path(entry["command"]).name.lower()
    return command in ("pcmem", "pcmem.exe") or args[:2] == ["-m", "pcmem"]
