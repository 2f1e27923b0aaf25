"""The ``pcmem`` command line: a thin shell over the library. Every command takes ``--json``.

Errors raised by pcmem are printed as one line on stderr with a non-zero exit status (see
:attr:`pcmem.errors.PcmemError.exit_code`), never as a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from pcmem import __version__, offline
from pcmem.errors import PcmemError
from pcmem.settings import DB_ENV, lock_timeout, resolve_db_path, skip_pydantic_plugin_discovery

if TYPE_CHECKING:
    from pcmem.compose.runtime import SyncRuntime
    from pcmem.store.engine import StorageEngine, StoreLocation

#: Which module of pcmem.cli defines each command. A call imports only its command's module (and what that needs):
#: loading every command up front would make a cold ``pcmem search`` import numpy, rich, the bench and model code.
COMMAND_MODULES: dict[str, str] = {
    "bench": "bench_command",
    "check": "check_command",
    "demo": "demo_command",
    "doctor": "doctor_command",
    "fusion": "fusion_command",
    "init": "init_command",
    "context": "context_command",
    **dict.fromkeys(("remember", "list", "history", "changes", "revise", "retire", "reactivate",
                     "forget", "scopes", "where"), "memory_commands"),
    **dict.fromkeys(("export", "import"), "transfer_commands"),
    "migrate": "migrate_command",
    "models": "model_commands",
    **dict.fromkeys(("search", "reindex"), "search_commands"),
    **dict.fromkeys(("serve", "mcp"), "serve_commands"),
    "show": "show_command",
    "tui": "tui_command",
}


def open_store(path: Any, **options: Any) -> SyncRuntime:
    """:func:`pcmem.open`, imported when a command opens the store (not for ``--help`` or ``where``)."""
    from pcmem.compose.runtime import SyncRuntime

    return SyncRuntime.open(path, **options)


def _degrade_unencodable_output() -> None:
    """Print what the terminal's encoding cannot show as ``\\xe9``-style escapes instead of failing half-way with
    UnicodeEncodeError (``PYTHONIOENCODING=ascii``, a legacy code page): entry texts are any Unicode. stderr already
    does this by default; stdout's handler is strict. (click's own echo writes UTF-8 to a stream it finds ASCII.)"""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


@contextlib.contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    """A click usage error (unknown option, missing argument, bad value) as the one line every pcmem failure is,
    ``pcmem: error: ... See 'pcmem search --help'.``, with click's exit status (2), instead of usage, hint and
    message on three lines. ``pcmem`` alone still prints the help."""
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise
    except click.ClickException as error:
        message = " ".join(error.format_message().split())
        context = getattr(error, "ctx", None)
        if context is not None and context.command.get_help_option(context) is not None:
            message = f"{message.rstrip('.')}. See '{context.command_path} --help'."
        click.echo(f"pcmem: error: {message}", err=True)
        raise click.exceptions.Exit(error.exit_code) from None


class _Group(click.Group):
    """Commands load on first use (see :data:`COMMAND_MODULES`); ``--help`` lists them all."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        offline.apply(own_process=True)  # the CLI, TUI, servers and benchmarks, and every process they start
        _degrade_unencodable_output()
        skip_pydantic_plugin_discovery()  # before the first validator is built
        return super().main(*args, **kwargs)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _one_line_usage_errors():  # the group's own options (pcmem --bogus)
            return super().make_context(info_name, args, parent, **extra)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(f"pcmem.cli.{COMMAND_MODULES[cmd_name]}").register(self)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _one_line_usage_errors():  # the commands' options and arguments, and usage errors they raise
                return super().invoke(ctx)
        except PcmemError as error:
            click.echo(f"pcmem: error: {error}", err=True)
            sys.exit(error.exit_code)
        except KeyboardInterrupt:
            click.echo("pcmem: interrupted", err=True)
            sys.exit(130)


class StoreContext:
    """Opens the store lazily, so ``pcmem --help`` never touches a file.

    ``runtime`` is for commands that write: it creates a missing store. ``reader`` is for commands that only read: a
    missing store is "no store at PATH" and nothing is created. Either is a client of the process that owns the
    store when one does (an agent's ``pcmem mcp``, the TUI, an app), else this command owns it while it runs.
    """

    def __init__(self, db: str | None, embedder: str | None = None) -> None:
        self.path = resolve_db_path(db)
        self.embedder = embedder
        self._runtime: SyncRuntime | None = None
        self._located: tuple[StorageEngine, StoreLocation] | None = None

    def located(self) -> tuple[StorageEngine, StoreLocation]:
        """The store's engine and location, resolved once per command (the owner's address, the lock probe and the
        open all use this one; InputError for a target that names no store)."""
        if self._located is None:
            from pcmem.store import engines

            self._located = engines.located(self.path)
        return self._located

    def open(self, *, create: bool, embeds: bool = True) -> SyncRuntime:
        """``embeds=False``: the command never embeds (a full-text search), so the store's embedder is not resolved
        unless ``--embedder`` names one."""
        if self._runtime is None:
            embedder = self.embedder or ("auto" if embeds else None)
            self._runtime = open_store(self.located()[1], embedder=embedder, create=create,
                                      lock_timeout=lock_timeout())
        return self._runtime

    @property
    def runtime(self) -> SyncRuntime:
        return self.open(create=True)

    @property
    def reader(self) -> SyncRuntime:
        """A reading command never embeds: the store's embedder is not resolved (its preset code, numpy) unless
        ``--embedder`` names one."""
        return self.open(create=False, embeds=False)

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="PATH|URL",
    help=f"Store file, or seekdb:///DATA_DIR / seekdb://USER:PASS@HOST:PORT/DB for OceanBase seekdb. "
    f"Default: ${DB_ENV}, else a per-user file (see `pcmem where`).",
)
@click.option(
    "--embedder",
    metavar="PRESET|DIR",
    default=None,
    help="Embedding model: a preset (see `pcmem models`), an ONNX model directory or fastembed:MODEL. Default: the "
         "one the store's vectors were made with (a new store: $PCMEM_EMBEDDER, else minilm-l6-int8).",
)
@click.version_option(__version__, prog_name="pcmem")
@click.pass_context
def main(ctx: click.Context, db: str | None, embedder: str | None) -> None:
    """pcmem — an offline, single-file store of agent memory.

    \b
    Quick start:
      pcmem demo                                  # seed a sample scope
      pcmem search --scope pcmem-demo "when do releases go out?"
      pcmem remember --scope project "We deploy on Fridays."
      pcmem --db team.duckdb init --embedder mpnet-base-int8   # a store with the stronger embedder
    """
    if db is not None and not db.strip():
        raise click.UsageError(f"--db (or ${DB_ENV}) is empty; give a store path, or unset it for the default")
    store = StoreContext(db, embedder)
    ctx.obj = store
    ctx.call_on_close(store.close)


__all__ = ["COMMAND_MODULES", "StoreContext", "main"]
