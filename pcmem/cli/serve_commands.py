"""``pcmem serve`` (HTTP: PowerContext v1, /x/pcmem, MCP at /mcp) and ``pcmem mcp`` (MCP over stdio).

FastAPI, uvicorn and the MCP SDK load only when these commands run (the ``serve`` extra).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from pcmem.cli import render
from pcmem.cli.rerank_option import rerank_option
from pcmem.errors import ConfigurationError, InputError

_MODEL_HELP = ("Rerank every search with this local generation model, e.g. llama-cpp:smollm2-135m-instruct "
               "(default: as configured by the POWERCONTEXT_SERVER_* environment).")


def read_token(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        token = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigurationError(f"cannot read the token file {path}: {error.strerror}") from None
    if len(token) < 16:
        raise ConfigurationError(f"the token in {path} is shorter than 16 characters; use e.g. "
                                 "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`")
    return token


def require_serve_extra() -> None:
    """Each command calls this first, before anything imports FastAPI or the MCP SDK (pcmem.serve's own
    ``__init__`` imports neither), so a missing extra is one line naming it, not an import traceback."""
    from pcmem.serve import require_serve

    require_serve()


@contextlib.contextmanager
def _opened(store, model: str | None, rerank: str | None, stops) -> Iterator[Any]:  # noqa: ANN001
    """The store opened for a server (a MemoryApi), closed however the block ends; from then on ``stops`` ignores
    further signals, so they cannot cut the close short (see pcmem.serve.shutdown)."""
    from pcmem.serve import open_for_serving
    from pcmem.serve.operations import MemoryApi

    api = MemoryApi(open_for_serving(store.path, embedder=store.embedder, model=model, rerank=rerank), store.path)
    try:
        yield api
    finally:
        stops.closing()
        api.close()
        api.runtime.close()


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback requires --token-file.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0 picks a free port.")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="File holding the bearer token clients must send (Authorization: Bearer TOKEN). "
                   "Default: none (loopback only).")
@click.option("--model", metavar="PROVIDER:NAME", default=None, help=_MODEL_HELP)
@rerank_option("(Default: listwise with --model.)")
@click.option("--max-body-bytes", type=click.IntRange(1024, 64 * 1024 * 1024), default=1024 * 1024,
              show_default=True, help="Larger request bodies get 413.")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="Allow browser calls from this origin (repeatable). Default: no CORS.")
@click.option("--allow-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="Also answer requests whose Host is NAME (repeatable), e.g. a name a proxy or the LAN uses. "
                   "Default: localhost, 127.0.0.1, [::1] and --host; other names get 421 (DNS rebinding guard).")
@click.option("--no-mcp", is_flag=True, help="Do not serve MCP at /mcp.")
@click.option("--dry-run", is_flag=True, help="Open the store and models, print what would be served, and exit.")
@render.json_option
def serve(host: str, port: int, token_file: str | None, model: str | None, rerank: str | None, max_body_bytes: int,
          cors_origins: tuple[str, ...], allowed_hosts: tuple[str, ...], no_mcp: bool, dry_run: bool,
          as_json: bool) -> None:
    """Serve the store over HTTP: PowerContext's v1 Memory API, /x/pcmem extras and MCP at /mcp.

    The store stays open and the models warm, so a search costs milliseconds instead of a CLI start.
    With --json, print one JSON line (url, mcp url, store) once listening; with --dry-run, print the store,
    models and address it would serve, and exit.

    \b
    Examples:
      pcmem serve                                  # http://127.0.0.1:8765, no token on loopback
      pcmem --db team.duckdb serve --port 0 --json # a free port, printed as JSON
      pcmem serve --host 0.0.0.0 --token-file ~/.config/pcmem/token
      pcmem serve --model llama-cpp:smollm2-135m-instruct   # rerank every search
      curl -s localhost:8765/v1/memory/search -H 'content-type: application/json' \\
           -d '{"scope_id": "project", "query": "deploy day"}'
    """
    require_serve_extra()
    from pcmem.serve.app import ServeOptions
    from pcmem.serve.middleware import is_loopback
    from pcmem.serve.shutdown import StopSignals

    token = read_token(token_file)
    if token is None and not is_loopback(host):
        raise InputError(f"--host {host} is not a loopback address: refusing to serve without --token-file")
    options = ServeOptions(token=token, max_body_bytes=max_body_bytes, cors_origins=cors_origins, host=host,
                           mcp=not no_mcp, allowed_hosts=allowed_hosts)
    store = click.get_current_context().obj
    with StopSignals() as stops, _opened(store, model, rerank, stops) as api:
        if dry_run:
            _print_plan(api, options, port, as_json)
        else:
            _run_http(api, options, port, stops, as_json)


def _print_plan(api, options, port: int, as_json: bool) -> None:  # noqa: ANN001
    plan = {**api.readiness().model_dump(mode="json"), "host": options.host, "port": port,
            "token": options.token is not None, "mcp": options.mcp, "max_body_bytes": options.max_body_bytes,
            "cors_origins": list(options.cors_origins), "allowed_hosts": list(options.allowed_hosts)}
    if as_json:
        render.emit_json(plan)
    else:
        for key, value in plan.items():
            click.echo(f"{key}: {value}")


def _run_http(api, options, port: int, stops, as_json: bool) -> None:  # noqa: ANN001
    from pcmem.serve.app import create_app
    from pcmem.serve.http_server import run_http

    def announce(url: str) -> None:
        if as_json:
            print(json.dumps({"url": url, "mcp": f"{url}/mcp", "store": api.store}), flush=True)
        else:
            print(f"pcmem serve: {url} (MCP at {url}/mcp), store {api.store}", file=sys.stderr, flush=True)

    run_http(create_app(api, options), options.host, port, stops, announce)


class _McpGroup(click.Group):
    """``pcmem mcp`` serves; its subcommands (``install``, ``uninstall``: pcmem.cli.mcp_install) load on first use.
    Its help lists the tools from their declarations (pcmem.serve.tools), read only when help is shown: looking the
    command up (``pcmem --help``) loads no pydantic models."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["install", "uninstall"]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.list_commands(ctx):
            return None
        from pcmem.cli import mcp_install

        command: click.Command = getattr(mcp_install, cmd_name)
        return command

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        from pcmem.serve.tools import declared

        with formatter.section("Tools"):
            formatter.write_dl([(tool.name, tool.summary) for tool in declared()])


@click.group(cls=_McpGroup, invoke_without_command=True)
@click.option("--model", metavar="PROVIDER:NAME", default=None, help=_MODEL_HELP)
@rerank_option("(Default: listwise with --model.)")
@render.json_option
def mcp(model: str | None, rerank: str | None, as_json: bool) -> None:
    """Serve the MCP tools over stdio, for a desktop agent (Claude Desktop, Cursor, Codex...).

    The tools are listed below. Logs go to stderr; stdout carries only MCP.
    With --json, print the tools and the store, and exit without serving.

    \b
    Examples:
      pcmem mcp                                    # the per-user store, or $PCMEM_DB
      PCMEM_DB=~/notes/memory.duckdb pcmem mcp
      pcmem --db memory.duckdb mcp --json          # what it would serve
      pcmem mcp install --host claude-desktop      # add this pcmem to a host's configuration
    """
    if click.get_current_context().invoked_subcommand is not None:
        return
    store = click.get_current_context().obj
    require_serve_extra()
    if as_json:
        from pcmem.serve.tools import declared

        render.emit_json({"db": str(store.path), "tools": [tool.name for tool in declared()], "model": model})
        return
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    import anyio

    from pcmem.serve.shutdown import StopSignals
    from pcmem.serve.stdio import run_stdio

    with StopSignals(interrupt=True) as stops, _opened(store, model, rerank, stops) as api:
        anyio.run(run_stdio, api, stops)
    if stops.interrupted():
        raise KeyboardInterrupt  # after the store was closed: "pcmem: interrupted", exit 130


def register(group: click.Group) -> None:
    group.add_command(serve)
    group.add_command(mcp)
