"""``pcmem fusion``: the store's default fusion — shown, set, removed.

The default is kept in the store file, so every process and every surface (the CLI, the library, ``pcmem serve``,
``pcmem mcp``) searches with it unless the request chooses (``--fusion``) or the runtime does
(``PCMEM_SEARCH_FUSION``); :func:`pcmem.search.fusion.choose_fusion` is where that order is decided.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pcmem.cli import render
from pcmem.settings import ENV_SEARCH_FUSION, SEARCH_FUSIONS

if TYPE_CHECKING:  # SOURCES is read by a search answered without pydantic (pcmem.cli.owner_reads)
    from pcmem.types.search import FusionDefault

#: Where a search's fusion came from, as the user reads it (here and on a search's page).
SOURCES = {
    "request": "chosen by the search",
    "runtime": f"${ENV_SEARCH_FUSION}, which overrides the store's default",
    "store": "the store's default (`pcmem fusion`)",
    "contract": "the contract's: the store keeps no default",
}


def _print(chosen: FusionDefault, as_json: bool) -> None:
    if as_json:
        render.emit_json(chosen)
        return
    click.echo(f"searches fuse with {chosen.fusion} ({SOURCES[chosen.source]}); a search's --fusion overrides it")
    if chosen.source == "runtime":
        click.echo(f"the store's default: {chosen.store_default or 'none (rrf, the contract)'}")


@click.group(invoke_without_command=True)
@render.json_option
@click.pass_context
def fusion(ctx: click.Context, as_json: bool) -> None:
    """Show how searches that do not choose a fusion fuse their channels, and why.

    Order: a search's --fusion > $PCMEM_SEARCH_FUSION > the store's default (kept in the store file, set here) >
    rrf, the contract's. convex is non-contract: more recall with a strong embedder (see the docs: guides/search.md).

    \b
    Examples:
      pcmem fusion
      pcmem fusion set convex
      pcmem fusion unset
    """
    if ctx.invoked_subcommand is None:
        _print(ctx.obj.reader.memory.search_fusion(), as_json)


@fusion.command("set")
@click.argument("name", type=click.Choice(SEARCH_FUSIONS))
@render.json_option
@click.pass_context
def set_default(ctx: click.Context, name: str, as_json: bool) -> None:
    """Keep NAME in the store as the default fusion of every search that does not choose one.

    \b
    Example:
      pcmem fusion set convex
    """
    store = ctx.find_root().obj.open(create=False, embeds=False)
    _print(store.memory.set_search_fusion(name), as_json)


@fusion.command("unset")
@render.json_option
@click.pass_context
def unset_default(ctx: click.Context, as_json: bool) -> None:
    """Remove the store's default fusion: searches that do not choose use rrf, the contract's."""
    store = ctx.find_root().obj.open(create=False, embeds=False)
    _print(store.memory.set_search_fusion(None), as_json)


def register(group: click.Group) -> None:
    group.add_command(fusion)
