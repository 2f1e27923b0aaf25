"""The ``pcmem`` command line: a thin shell over the library. Every command takes ``--json``.

Errors raised by pcmem are printed as one line on stderr with a non-zero exit status (see
:attr:`pcmem.errors.PcmemError.exit_code`), never as a traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from pcmem import __version__
from pcmem.compose.runtime import SyncRuntime, open_sync
from pcmem.errors import PcmemError
from pcmem.settings import DB_ENV, lock_timeout, resolve_db_path


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PcmemError as error:
            click.echo(f"pcmem: error: {error}", err=True)
            sys.exit(error.exit_code)
        except KeyboardInterrupt:
            click.echo("pcmem: interrupted", err=True)
            sys.exit(130)


class StoreContext:
    """Opens the store lazily, so ``pcmem --help`` never touches a file.

    ``runtime`` is for commands that write: it creates a missing store and opens it in shared mode, so the file is
    held only during each short transaction — never while a model embeds (other processes, e.g. the TUI, keep
    working). ``reader`` is for commands that only read: a missing store is "no store at PATH" and nothing is
    created.
    """

    def __init__(self, db: str | None, embedder: str | None = None) -> None:
        self.path = resolve_db_path(db)
        self.embedder = embedder
        self._runtime: SyncRuntime | None = None

    def open(self, *, shared: bool, create: bool) -> SyncRuntime:
        if self._runtime is None:
            self._runtime = open_sync(self.path, embedder=self.embedder or "auto", shared=shared, create=create,
                                      lock_timeout=lock_timeout())
        return self._runtime

    @property
    def runtime(self) -> SyncRuntime:
        return self.open(shared=True, create=True)

    @property
    def reader(self) -> SyncRuntime:
        return self.open(shared=False, create=False)

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


from pcmem.cli import (  # noqa: E402  (commands register on import)
    bench_commands,
    check_command,
    demo_command,
    init_command,
    memory_commands,
    migrate_command,
    model_commands,
    search_commands,
    tui_command,
)

init_command.register(main)
memory_commands.register(main)
bench_commands.register(main)
check_command.register(main)
search_commands.register(main)
model_commands.register(main)
demo_command.register(main)
migrate_command.register(main)
tui_command.register(main)

__all__ = ["StoreContext", "main"]
