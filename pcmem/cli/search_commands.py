"""``pcmem search`` and ``pcmem reindex``."""

from __future__ import annotations

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from pcmem.cli import render
from pcmem.search.models import MAX_SEARCH_LIMIT, SearchMemoryRequest, SearchPage


def _print_page(page: SearchPage, query: str) -> None:
    if page.memory is None:
        render.console.print("no memory in this scope yet: nothing to search")
        return
    header = f"{len(page.hits)} hits for {query!r} in {page.memory.scope!r} @ revision {page.memory.revision} " \
             f"(mode {page.mode})"
    render.table(
        header,
        ("#", "score", "via", "entry", "text"),
        [(rank, f"{hit.score:.4f}", "+".join(hit.matched_by), hit.citation.entry_id, render.preview(hit.text, 56))
         for rank, hit in enumerate(page.hits, start=1)],
    )


@click.command()
@click.option("--scope", "-s", required=True, help="The scope to search.")
@click.option("--mode", type=click.Choice(["auto", "fts", "vector", "hybrid"]), default="auto", show_default=True,
              help="auto = hybrid when vectors are available, else full-text.")
@click.option("--limit", "-n", type=click.IntRange(1, MAX_SEARCH_LIMIT), default=10, show_default=True)
@click.argument("query")
@render.json_option
def search(scope: str, mode: str, limit: int, query: str, as_json: bool) -> None:
    """Search a scope's head revision: BM25 full-text + vectors, fused with RRF.

    \b
    Example:
      pcmem search --scope pcmem-demo "when do releases go out?"
    """
    runtime = click.get_current_context().obj.runtime
    page = runtime.memory.for_scope(scope).search(SearchMemoryRequest(query=query, limit=limit, mode=mode))
    if as_json:
        render.emit_json(page)
    else:
        _print_page(page, query)


@click.command()
@render.json_option
def reindex(as_json: bool) -> None:
    """Embed every active entry lacking a vector for the configured embedding model (e.g. after a model change).

    \b
    Example:
      pcmem reindex
    """
    runtime = click.get_current_context().obj.runtime
    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=render.err_console, disable=as_json or not render.err_console.is_terminal,
                  transient=True) as progress:
        task = progress.add_task("embed", total=None)
        report = runtime.reindex(lambda done, total: progress.update(task, completed=done, total=total))
    result = {
        "profile": report.profile.describe(),
        "previous_profile": report.previous_profile.describe() if report.previous_profile else None,
        "embedded": report.embedded,
        "seconds": round(report.seconds, 3),
    }
    if as_json:
        render.emit_json(result)
    else:
        render.console.print(f"embedded {report.embedded} entries with {result['profile']} in {result['seconds']} s")


def register(group: click.Group) -> None:
    group.add_command(search)
    group.add_command(reindex)
