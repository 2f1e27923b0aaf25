"""``pcmem context``: a prompt-ready block of memory under a budget (:meth:`pcmem.SyncMemoryService.context`)."""

from __future__ import annotations

import click

from pcmem.cli import render
from pcmem.types.context import DEFAULT_CONTEXT_BYTES, MAX_CONTEXT_BYTES, MIN_CONTEXT_BYTES
from pcmem.vocabulary import SEARCH_MODES


@click.command()
@click.option("--scope", "-s", "scopes", required=True, multiple=True, help="A scope to read (repeatable).")
@click.option("--max-bytes", type=click.IntRange(MIN_CONTEXT_BYTES, MAX_CONTEXT_BYTES), default=DEFAULT_CONTEXT_BYTES,
              show_default=True, help="The block is at most this many UTF-8 bytes.")
@click.option("--max-tokens", type=click.IntRange(64), default=None,
              help="Also at most this many tokens, counted as one per 4 ASCII letters (rounded up) and one per other "
                   "character but whitespace (at least what subword tokenizers count).")
@click.option("--relevant", type=click.IntRange(0, 50), default=6, show_default=True,
              help="Search hits for QUERY to include first.")
@click.option("--recent", type=click.IntRange(0, 50), default=4, show_default=True,
              help="Newest active entries to include after them.")
@click.option("--kind", "kinds", multiple=True, help="Only hits of this kind (repeatable).")
@click.option("--mode", type=click.Choice(SEARCH_MODES), default="auto", show_default=True)
@click.option("--explain", is_flag=True, help="Say what was left out, and why (on stderr; in the JSON with --json).")
@click.argument("query", required=False)
@render.json_option
def context(scopes: tuple[str, ...], max_bytes: int, max_tokens: int | None, relevant: int, recent: int,
            kinds: tuple[str, ...], mode: str, explain: bool, query: str | None, as_json: bool) -> None:
    """Print the memory an agent should see for QUERY: relevant and recent entries, each once, cited, never over
    the budget. Without QUERY, the newest entries only. The text goes to stdout as is, ready for a prompt.

    \b
    Examples:
      pcmem context --scope user:ana "what editor does Ana use?"
      pcmem context --scope user:ana --scope project --max-tokens 500 --explain "release plan"
      pcmem context --scope project --relevant 0 --recent 10      # the start of a session
    """
    store = click.get_current_context().obj
    runtime = store.open(create=False, embeds=query is not None and mode != "fts")
    block = runtime.memory.context(query, scopes=list(scopes), max_bytes=max_bytes, max_tokens=max_tokens,
                                   relevant=relevant, recent=recent, kinds=list(kinds) or None, mode=mode,
                                   explain=explain)
    if as_json:
        render.emit_json(block)
        return
    if block.text:
        click.echo(block.text)
    if explain:
        click.echo(f"{len(block.items)} entries, {block.bytes} bytes, ~{block.tokens} tokens", err=True)
        for omission in block.omitted:
            why = (f"duplicate of [{omission.duplicate_of}]" if omission.duplicate_of
                   else "duplicate" if omission.reason == "duplicate" else f"over the budget ({omission.bytes} bytes)")
            click.echo(f"left out: {omission.scope}/{omission.citation.entry_id} ({omission.source}): {why}",
                       err=True)


def register(group: click.Group) -> None:
    group.add_command(context)
