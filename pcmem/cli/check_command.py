"""``pcmem check``: verify a store file; ``--repair`` rebuilds derived data."""

from __future__ import annotations

import sys

import click

from pcmem.cli import render


@click.command()
@click.option("--repair", is_flag=True, help="Rebuild the head projection and full-text index from the event log.")
@render.json_option
def check(repair: bool, as_json: bool) -> None:
    """Check migrations, the revision chain, entry hashes and that search projections agree with every head.

    Exits 1 when problems remain. Without --repair nothing is changed.

    \b
    Example:
      pcmem check --json
    """
    backend = click.get_current_context().obj.reader.backend
    require_file_maintenance(backend, "pcmem check")
    report = backend.repair() if repair else backend.check()
    result = {"ok": report.ok, "problems": report.problems, "scopes": report.scopes, "revisions": report.revisions,
              "entry_versions": report.entry_versions, "tombstones": report.tombstones, "notes": report.notes, "repaired": repair}
    if as_json:
        render.emit_json(result)
    else:
        verdict = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        render.console.print(f"{verdict}: {report.scopes} scopes, {report.revisions} revisions, "
                             f"{report.entry_versions} entry versions, {report.tombstones} forgotten entries"
                             + (" (after repair)" if repair else ""))
        for problem in report.problems:
            render.console.print(f"  - {problem}")
        for note in report.notes:
            render.console.print(f"  {note}")
    if not report.ok:
        sys.exit(1)


def require_file_maintenance(backend: object, what: str) -> None:
    """check/repair rebuild derived data of a DuckDB file; other engines keep their own integrity."""
    if not hasattr(backend, "repair"):
        from pcmem.errors import CapabilityNotSupportedError

        raise CapabilityNotSupportedError(f"{what} works on DuckDB store files; {backend!r} is checked by its engine")


def register(group: click.Group) -> None:
    group.add_command(check)
