"""``pcmem init``: create a store with a chosen embedder (or confirm an existing one)."""

from __future__ import annotations

import click

from pcmem.cli import render
from pcmem.compose.backends import open_backend
from pcmem.compose.embedders import resolve_embedder
from pcmem.compose.runtime import SyncRuntime
from pcmem.errors import InputError
from pcmem.store import engines


@click.command()
@click.option("--embedder", "embedder_choice", metavar="PRESET|DIR", default=None,
              help="Embedding model for the store's vectors (default: the global --embedder, $PCMEM_EMBEDDER, "
                   "else minilm-l6-int8). See `pcmem models`.")
@render.json_option
def init(embedder_choice: str | None, as_json: bool) -> None:
    """Create the store and fix its embedding model. Idempotent; an existing store keeps its data.

    Later commands pick the store's embedder up by themselves. To change it for an existing store, use
    `pcmem reindex --embedder`, which keeps the old vectors usable until the new ones are complete.

    \b
    Examples:
      pcmem init
      pcmem --db team.duckdb init --embedder mpnet-base-int8
      pcmem --db 'seekdb:///srv/pcmem-seekdb?database=team' init --embedder mpnet-base-int8
    """
    store = click.get_current_context().obj
    choice = embedder_choice or store.embedder or "auto"
    engine, location = engines.located(store.path)
    existed = engine.exists(location)
    backend = open_backend(location)
    try:
        new = backend.embedding_profile() is None and not backend.scope_summaries()
        runtime = SyncRuntime(backend, embedder=resolve_embedder(choice, backend))
        profile = backend.embedding_profile()
        wanted = runtime.embedder.profile if runtime.embedder is not None else None
        analyzer = backend.analyzer.name
    except BaseException:
        backend.close()
        if existed is False:
            engine.remove_new(location)  # a failed init leaves nothing a later command could adopt
        raise
    backend.close()
    if wanted is not None and profile != wanted:
        raise InputError(f"{store.path} already holds vectors of {profile.describe() if profile else 'no model'}; "
                         f"switch it with `pcmem --db {store.path} reindex --embedder {choice}`")
    result = {"path": str(store.path), "created": new, "embedding_profile": profile.describe() if profile else None,
              "analyzer": analyzer}
    if as_json:
        render.emit_json(result)
    else:
        verb = "created" if new else "already initialised"
        render.console.print(f"{verb}: {store.path}\n  embeddings: {result['embedding_profile']}\n"
                             f"  full-text analyzer: {analyzer}")


def register(group: click.Group) -> None:
    group.add_command(init)
