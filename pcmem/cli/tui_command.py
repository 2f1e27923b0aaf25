"""``pcmem tui``: the terminal UI. Textual and the ``pcmem_tui`` package load only when this command runs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from pcmem import settings
from pcmem.cli import render
from pcmem.config import InferenceConfig
from pcmem.errors import ConfigurationError


def _make_app() -> Callable[..., Any]:
    try:
        from pcmem_tui.app import make_app
    except ModuleNotFoundError as error:
        if error.name not in ("textual", "pcmem_tui"):
            raise
        raise ConfigurationError("the terminal UI needs Textual: pip install 'pcmem[tui]'") from None
    return make_app


def _has_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@click.command()
@click.option("--model", metavar="PROVIDER:NAME", default=None,
              help="Generation model for the rerank policies, e.g. llama-cpp:smollm2-135m-instruct "
                   "(default: $POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL).")
@render.json_option
def tui(model: str | None, as_json: bool) -> None:
    """Browse scopes, entries and revisions, search and inspect reranks in a terminal UI.

    With --json, print the store and model the UI would open, and exit without starting it.

    \b
    Examples:
      pcmem tui
      pcmem --db memory.duckdb tui --model llama-cpp:smollm2-135m-instruct
    """
    store = click.get_current_context().obj
    inference = InferenceConfig.from_env(generation_model=model)  # a malformed --model fails here, before the UI
    if as_json:
        render.emit_json({"db": str(store.path), "model": inference.generation_model,
                          "embedder": store.embedder or "auto"})
        return
    if not _has_terminal():
        # Without a terminal Textual cannot read keys and spins a CPU drawing to nowhere.
        raise ConfigurationError("pcmem tui needs an interactive terminal (stdin and stdout are not a TTY); "
                                 "use the other commands, or --json, in scripts")
    options = {"embedder": store.embedder} if store.embedder else {}
    _make_app()(store.path, inference=inference, editor=settings.editor(), **options).run()


def register(group: click.Group) -> None:
    group.add_command(tui)
