"""``pcmem tui``: the terminal UI. Textual and the ``tui`` package load only when this command runs."""

from __future__ import annotations

import click

from pcmem.errors import ConfigurationError


def _make_app():  # noqa: ANN202 - returns tui.app.make_app
    try:
        from tui.app import make_app
    except ModuleNotFoundError as error:
        if error.name not in ("textual", "tui"):
            raise
        raise ConfigurationError("the terminal UI needs Textual: pip install textual") from None
    return make_app


@click.command()
@click.option("--model", metavar="PROVIDER:NAME", default=None,
              help="Generation model for the rerank policies, e.g. llama-cpp:smollm2-135m-instruct "
                   "(default: $POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL).")
def tui(model: str | None) -> None:
    """Browse scopes, entries and revisions, search and inspect reranks in a terminal UI.

    \b
    Examples:
      pcmem tui
      pcmem --db memory.duckdb tui --model llama-cpp:smollm2-135m-instruct
    """
    store = click.get_current_context().obj
    _make_app()(store.path, model=model).run()


def register(group: click.Group) -> None:
    group.add_command(tui)
