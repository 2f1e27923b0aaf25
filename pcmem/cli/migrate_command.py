"""``pcmem migrate``: copy a store, with every revision, to another backend (e.g. a DuckDB file to seekdb)."""

from __future__ import annotations

import sys

import click

from pcmem.cli import render
from pcmem.cli.progress import progress_bar
from pcmem.errors import InputError, NotFoundError


@click.command()
@click.option("--from", "source", required=True, metavar="PATH|URL", help="The store to copy (left unchanged).")
@click.option("--to", "destination", required=True, metavar="PATH|URL",
              help="An empty store: a new DuckDB file, seekdb:///DATA_DIR or seekdb://USER:PASS@HOST:PORT/DB.")
@render.json_option
def migrate(source: str, destination: str, as_json: bool) -> None:
    """Copy every scope with all its revisions, ids and timestamps (citations stay valid) and the active
    profile's vectors (no re-embedding), then verify the copy. Exits 1 when the verification finds differences.

    A DuckDB file is written as TO.migrate-partial and renamed to TO only once complete and verified: an interrupted
    migrate leaves no TO (the next run removes the partial copy).

    \b
    Examples:
      pcmem migrate --from ~/.local/share/pcmem/memory.duckdb --to seekdb:///srv/pcmem-seekdb
      pcmem migrate --from memory.duckdb --to 'seekdb://pcmem:secret@ob.example:2881/pcmem?tenant=app' --json
    """
    from pcmem.compose.backends import open_backend
    from pcmem.settings import resolve_db_path
    from pcmem.store import engines
    from pcmem.store.migrate import migrate as copy_store

    source_engine, source_location = engines.located(resolve_db_path(source))
    destination_engine, destination_location = engines.located(resolve_db_path(destination))
    if source_engine.exists(source_location) is False:
        raise NotFoundError(f"the source store {source} does not exist")
    if source_location == destination_location:
        raise InputError("--from and --to name the same store")
    # A source with damaged blocks (see `pcmem check`) is read without index lookups: a damaged index stops no read.
    source_backend = open_backend(source_location, index_lookups=not source_engine.damaged(source_location))
    try:
        staged = destination_engine.stage(destination_location)  # a file is written under a temporary name
        if staged is not None and staged.removed_leftover and not as_json:
            render.console.print(f"removed {staged.partial}: an incomplete copy left by an interrupted migrate")
        try:
            destination_backend = open_backend(staged.partial if staged else destination_location)
            try:
                with progress_bar("copying revisions", enabled=not as_json) as advance:
                    report = copy_store(source_backend, destination_backend, advance)
            finally:
                destination_backend.close()
        except BaseException:
            if staged is not None:
                staged.discard()
            raise
    finally:
        source_backend.close()
    if staged is not None and report.verified:
        staged.publish()
    result = {
        "from": str(source), "to": str(destination), "scopes": report.scopes, "revisions": report.revisions,
        "entry_versions": report.entry_versions, "vectors": report.vectors,
        "profile": report.profile.describe() if report.profile else None,
        "fts_analyzer": {"source": report.source_analyzer, "destination": report.destination_analyzer},
        "seconds": round(report.seconds, 2), "verified": report.verified, "problems": report.problems,
        "removed_incomplete_copy": staged is not None and staged.removed_leftover,
    }
    if staged is not None and not report.verified:
        result["unverified_copy"] = str(staged.partial)
    if as_json:
        render.emit_json(result)
    else:
        render.console.print(
            f"copied {report.scopes} scopes, {report.revisions} revisions, {report.entry_versions} entry versions and "
            f"{report.vectors} vectors in {report.seconds:.1f} s: "
            + ("verified" if report.verified else f"{len(report.problems)} problem(s)")
        )
        for problem in report.problems:
            render.console.print(f"  - {problem}")
        if staged is not None and not report.verified:
            render.console.print(f"  {destination} was not written; the copy is left at {staged.partial} (the next "
                                 "migrate to it removes it)")
    if not report.verified:
        sys.exit(1)


def register(group: click.Group) -> None:
    group.add_command(migrate)
