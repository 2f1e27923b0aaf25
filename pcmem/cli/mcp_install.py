"""``pcmem mcp install`` and ``pcmem mcp uninstall``: put this pcmem into an MCP host's configuration, or take it out.

The host catalogue (locations, formats, sources) is :mod:`pcmem.cli.mcp_hosts`; the edits themselves are
:mod:`pcmem.cli.host_config_json` / :mod:`pcmem.cli.host_config_toml` (text in, text out) and the file handling
:mod:`pcmem.cli.host_config_file` (backup, atomic replace).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import click

from pcmem.cli import host_config_file, host_config_json, host_config_toml, render
from pcmem.cli.mcp_hosts import HOSTS, Host, Places, Scope, host_named, is_pcmem_entry, pcmem_launcher
from pcmem.errors import InputError

Action = Literal["added", "updated", "unchanged", "removed", "absent"]
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Change:
    host: Host
    scope: Scope
    config: host_config_file.ConfigFile
    name: str
    entry: dict[str, Any] | None
    action: Action
    new_text: str


def _current_entry(host: Host, config: host_config_file.ConfigFile, name: str) -> Any:
    where = str(config.path)
    if host.format == "toml":
        return host_config_toml.table_at(host_config_toml.load(config.text, where), (*host.servers, name))
    return host_config_json.entry_at(host_config_json.load(config.text, where), host.servers, name, where)


def _refuse_foreign(config: host_config_file.ConfigFile, name: str, current: Any) -> None:
    if current is not None and not is_pcmem_entry(current):
        raise InputError(f"{config.path} has a server named {name!r} that does not run `pcmem mcp`; pcmem leaves "
                         "it alone: choose another --name")


def plan_install(host: Host, scope: Scope, path: Path, name: str, entry: dict[str, Any]) -> Change:
    config = host_config_file.read(path)
    current = _current_entry(host, config, name)
    _refuse_foreign(config, name, current)
    if current == entry:
        return Change(host, scope, config, name, entry, "unchanged", config.text)
    where = str(config.path)
    if host.format == "toml":
        new_text = host_config_toml.set_table(config.text, (*host.servers, name), entry, where)
    else:
        new_text = host_config_json.set_entry(config.text, host.servers, name, entry, where)
    return Change(host, scope, config, name, entry, "updated" if current is not None else "added", new_text)


def plan_uninstall(host: Host, scope: Scope, path: Path, name: str) -> Change:
    config = host_config_file.read(path)
    current = _current_entry(host, config, name)
    if current is None:
        return Change(host, scope, config, name, None, "absent", config.text)
    _refuse_foreign(config, name, current)
    where = str(config.path)
    if host.format == "toml":
        new_text = host_config_toml.remove_table(config.text, (*host.servers, name), where)
    else:
        new_text = host_config_json.remove_entry(config.text, host.servers, name, where)
    return Change(host, scope, config, name, current, "removed", new_text)


def snippet(host: Host, name: str, entry: dict[str, Any]) -> str:
    """What a user would paste into the host's configuration."""
    if host.format == "toml":
        return host_config_toml.render_table((*host.servers, name), entry)
    return host_config_json.snippet(host.servers, name, entry)


def claude_mcp_add(name: str, scope: Scope, entry: dict[str, Any]) -> str:
    """The ``claude mcp add`` command that writes the same entry (Claude Code's own way, same documentation page)."""
    import shlex

    env = [part for key, value in entry["env"].items() for part in ("--env", f"{key}={value}")]
    words = ["claude", "mcp", "add", "--transport", "stdio", "--scope", scope, name, *env, "--",
             entry["command"], *entry["args"]]
    return shlex.join(words)


# --- the commands ------------------------------------------------------------------------------------------------


def _places() -> Places:
    from pcmem.settings import host_config_environment

    return Places(sys.platform, Path.home(), host_config_environment())


def _server_entry(host: Host) -> dict[str, Any]:
    from urllib.parse import urlsplit

    from pcmem.cli.mcp_hosts import server_environment
    from pcmem.settings import cache_dir, new_store_embedder

    target = click.get_current_context().obj.path  # the group's --db, resolved (pcmem.cli.StoreContext)
    if isinstance(target, str) and urlsplit(target).password:  # a seekdb URL with its password
        raise InputError("the store URL holds a password: pcmem writes nothing secret into a host's configuration; "
                         "give the host PCMEM_DB yourself")
    location = target if isinstance(target, str) else str(Path(target).absolute())
    command, args = pcmem_launcher()
    env = server_environment(location, cache_dir().absolute(), embedder=new_store_embedder("") or None)
    return host.entry(command, [*args, "mcp"], env)


def _common(function: Any) -> Any:
    for option in reversed((
        click.option("--host", "host_name", required=True, type=click.Choice(list(HOSTS)),
                     help="The MCP host whose configuration to change."),
        click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
                     help="user: every project of this user; project: one project's file (hosts that have one)."),
        click.option("--project", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="The project folder for --scope project (default: the current folder)."),
        click.option("--name", default="pcmem", show_default=True, help="The server's name in the configuration."),
        click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Edit this file instead of the host's usual one (a portable or Insiders install)."),
        click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing."),
        render.json_option,
    )):
        function = option(function)
    return function


def _config_path(host: Host, scope: Scope, project: Path | None, config_path: Path | None, name: str) -> Path:
    if not _NAME.fullmatch(name):
        raise InputError(f"--name {name!r}: use 1-64 letters, digits, '-' or '_' (every host accepts those)")
    if config_path is not None:
        return config_path.expanduser().absolute()
    return host.config_file(scope, _places(), (project or Path.cwd()).absolute())


@click.command()
@_common
@click.option("--print", "print_only", is_flag=True, help="Print the server entry to paste, and change no file.")
def install(host_name: str, scope: Scope, project: Path | None, name: str, config_path: Path | None, dry_run: bool,
            as_json: bool, print_only: bool) -> None:
    """Add this pcmem to an MCP host's configuration (Claude Desktop, Claude Code, Cursor, VS Code, Codex).

    The entry runs this pcmem by its absolute path (hosts do not search your shell's PATH) with `mcp`, and gives it
    the environment it needs, because hosts start servers with a short environment of their own, not your shell's:
    PCMEM_DB (the store: --db / $PCMEM_DB, else the per-user one, as an absolute path, so every host and your
    terminal share one store), PCMEM_CACHE_DIR (the prepared models), and PCMEM_EMBEDDER when it is set here. The
    host's pcmem finds the store's owner from the file and your account, whatever its environment. Nothing secret is
    written.

    Running it again changes nothing; a changed store or pcmem updates the entry. The old file is kept beside it
    (NAME.pcmem-backup-TIME, same mode); other servers and settings stay as they were. A file that is not valid
    JSON/TOML is refused, never overwritten. Project files (--scope project) are often committed: the entry holds
    this machine's paths. For Claude Code, --print also gives the `claude mcp add` command that writes the same.

    \b
    Examples:
      pcmem mcp install --host claude-desktop
      pcmem --db ~/notes/memory.duckdb mcp install --host cursor --dry-run
      pcmem mcp install --host vscode --scope project --project ~/src/app
      pcmem mcp install --host codex --print        # the [mcp_servers.pcmem] table, to paste
    """
    host = host_named(host_name)
    entry = _server_entry(host)
    if print_only:
        click.echo(snippet(host, name, entry), nl=False)
        if host.name == "claude-code":
            click.echo(f"or let Claude Code write it: {claude_mcp_add(name, scope, entry)}", err=True)
        return
    change = plan_install(host, scope, _config_path(host, scope, project, config_path, name), name, entry)
    _finish(change, dry_run, as_json)


@click.command()
@_common
def uninstall(host_name: str, scope: Scope, project: Path | None, name: str, config_path: Path | None,
              dry_run: bool, as_json: bool) -> None:
    """Remove the pcmem server entry from an MCP host's configuration (only an entry that runs `pcmem mcp`).

    The old file is kept beside it (NAME.pcmem-backup-TIME); nothing else in it changes.

    \b
    Examples:
      pcmem mcp uninstall --host cursor
      pcmem mcp uninstall --host codex --dry-run
    """
    host = host_named(host_name)
    change = plan_uninstall(host, scope, _config_path(host, scope, project, config_path, name), name)
    _finish(change, dry_run, as_json)


def _finish(change: Change, dry_run: bool, as_json: bool) -> None:
    changes = change.action not in ("unchanged", "absent")
    backup = None
    if changes and not dry_run:
        backup = host_config_file.write(change.config, change.new_text, private_folder=change.scope == "user")
    patch = host_config_file.diff(change.config, change.new_text)
    if as_json:
        render.emit_json({"host": change.host.name, "scope": change.scope, "config": str(change.config.path),
                          "name": change.name, "action": change.action, "written": changes and not dry_run,
                          "backup": None if backup is None else str(backup), "diff": patch, "entry": change.entry})
        return
    if dry_run:
        click.echo(patch or f"{change.config.path}: no change", nl=not patch)
        if changes:
            click.echo("(dry run: nothing written)", err=True)
        return
    click.echo(_summary(change, backup))
    for note in _notes(change):
        click.echo(note, err=True)


def _summary(change: Change, backup: Path | None) -> str:
    where = f"{change.host.title}'s {change.scope} configuration {change.config.path}"
    kept = f" (the old file is {backup})" if backup is not None else ""
    return {
        "added": f"added {change.name!r} to {where}{kept}",
        "updated": f"updated {change.name!r} in {where}{kept}",
        "unchanged": f"{where} already runs this pcmem as {change.name!r}: nothing to change",
        "removed": f"removed {change.name!r} from {where}{kept}",
        "absent": f"{where} has no server {change.name!r}: nothing to remove",
    }[change.action]


def _notes(change: Change) -> list[str]:
    notes = []
    if change.action in ("added", "updated", "removed"):
        notes.append(f"to load the change, {change.host.reload}")
    if change.action in ("added", "updated"):
        from pcmem.errors import ConfigurationError
        from pcmem.serve import require_serve

        try:
            require_serve()
        except ConfigurationError as missing:
            notes.append(f"the host cannot start it yet: {missing}")
    return notes
