"""``pcmem export`` and ``pcmem import``: a memory out to a file and back, in pcmem's JSON Lines or mem0's JSON
(:mod:`pcmem.cli.transfer` says what each field becomes)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import click

from pcmem.cli import render
from pcmem.cli.jsonl import Imported, read_entries, read_text
from pcmem.cli.transfer import mem0_item, pcmem_line, read_mem0
from pcmem.errors import InputError
from pcmem.types.memory import ListRequest, MemoryEntry, NewEntry, RememberRequest, WriteResult

FORMATS = click.Choice(["pcmem", "mem0"])
PAGE = 100
#: Characters that end a line for Python's ``splitlines`` and other readers, which ``json.dumps(ensure_ascii=False)``
#: leaves raw inside strings: escaped, a line of the export is a line for every reader.
_LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\u0085\u2028\u2029"}


def _json(value: object, **options: Any) -> str:
    return json.dumps(value, ensure_ascii=False, **options).translate(_LINE_BREAKS)


@click.command()
@click.option("--scope", "-s", "scopes", multiple=True, help="A scope to export (repeatable). Default: every scope.")
@click.option("--format", "shape", type=FORMATS, default="pcmem", show_default=True,
              help="pcmem: one JSON object per line; mem0: one JSON document as mem0's get_all returns it.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of standard output.")
@click.option("--json", "as_json", is_flag=True,
              help="With --output, print what was written as one JSON document (the export itself is JSON anyway).")
def export(scopes: tuple[str, ...], shape: str, output: Path | None, as_json: bool) -> None:
    """Write every active entry of the scopes (text, kind, key, metadata, date), in entry-id order per scope.

    `pcmem import` reads it back; `--format mem0` writes mem0's JSON (see `pcmem import --help`).

    \b
    Examples:
      pcmem export --scope notes > notes.jsonl
      pcmem export --format mem0 -o memories.json
      pcmem --db old.duckdb export | pcmem --db new.duckdb import --upsert -
    """
    memory = click.get_current_context().obj.reader.memory
    names = list(scopes) or [summary.scope for summary in memory.scopes()]
    entries = [(scope, entry) for scope in names for entry in _active(memory.for_scope(scope))]
    if shape == "mem0":
        text = _json({"results": [mem0_item(scope, entry) for scope, entry in entries]}, indent=2) + "\n"
    else:
        text = "".join(_json(pcmem_line(scope, entry)) + "\n" for scope, entry in entries)
    if output is None:
        click.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    counts = {name: sum(1 for scope, _ in entries if scope == name) for name in names}
    if as_json:
        render.emit_json({"output": str(output), "format": shape, "entries": counts})
    else:
        render.console.print(f"exported {len(entries)} entries of {len(names)} scopes to {output}")


def _active(scoped: Any) -> list[MemoryEntry]:
    """Every active entry of a scope, a page at a time (the pages read the revision the first one read)."""
    found: list[MemoryEntry] = []
    cursor = None
    while True:
        page = scoped.list(ListRequest(limit=PAGE, cursor=cursor))
        found += page.entries
        cursor = page.next_cursor
        if cursor is None:
            return found


@click.command("import")
@click.option("--scope", "-s", default=None,
              help="Import every entry into this scope. Default: the scope each line (or mem0 item) names.")
@click.option("--expected-revision", type=int, default=None,
              help="Compare-and-swap on the (one) scope: fail unless this is its head revision.")
@click.option("--upsert", is_flag=True,
              help="An entry whose key exists gets a new version when it differs and is left alone when equal, so "
                   "importing the same file twice changes nothing. Default: an existing key is an error.")
@click.option("--format", "shape", type=FORMATS, default="pcmem", show_default=True,
              help="pcmem: JSON Lines as `pcmem export` writes; mem0: mem0's get_all output or add request JSON.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path))
@render.json_option
def import_(scope: str | None, expected_revision: int | None, upsert: bool, shape: str, file: Path,
            as_json: bool) -> None:
    """Import FILE: JSON Lines, one {"text": …, "kind"?: …, "metadata"?: {…}, "entry_id"?: …, "created_at"?: …,
    "scope"?: …} per line (what `pcmem export` writes), or mem0's JSON with --format mem0.

    Everything is checked first; a bad line aborts the import (all bad lines are named) and nothing from the file
    is written. Each scope's entries land in one revision. FILE ``-`` reads standard input.

    \b
    Examples:
      pcmem import --scope notes notes.jsonl
      cat notes.jsonl | pcmem import --scope notes -
      pcmem import --upsert --format mem0 memories.json      # scopes from each item's user_id
    """
    records = read_entries(file, show_progress=not as_json) if shape == "pcmem" else \
        read_mem0(read_text(file), file)
    if not records:
        raise InputError(f"{file} has no entries")
    grouped = _by_scope(records, scope, file)
    if expected_revision is not None and len(grouped) > 1:
        raise InputError(f"--expected-revision names one scope's head, but {file} has entries for {len(grouped)}")
    memory = click.get_current_context().obj.runtime.memory
    results = {name: memory.for_scope(name).remember(RememberRequest(
        entries=tuple(entries), expected_revision=expected_revision, upsert=upsert)) for name, entries in
        sorted(grouped.items())}
    _print(results, as_json)


def _by_scope(records: list[Imported], scope: str | None, file: Path) -> dict[str, list[NewEntry]]:
    grouped: dict[str, list[NewEntry]] = defaultdict(list)
    for number, record in enumerate(records, start=1):
        target = scope or record.scope
        if target is None:
            raise InputError(f"{file}: entry {number} names no scope; give --scope")
        grouped[target].append(record.entry)
    return grouped


def _print(results: dict[str, WriteResult], as_json: bool) -> None:
    if as_json:
        render.emit_json(next(iter(results.values())) if len(results) == 1 else results)
        return
    for name, result in results.items():
        kept = len(result.unchanged_entry_ids)
        written = len(result.citations) - kept
        if result.unchanged:
            render.console.print(f"{name!r}: unchanged, {kept} entries already as in the file (revision "
                                 f"{result.memory.revision} stays the head)")
        else:
            render.console.print(f"imported {written} entries in {name!r} → revision {result.memory.revision}"
                                 + (f" ({kept} already as in the file)" if kept else ""))


def register(group: click.Group) -> None:
    group.add_command(export)
    group.add_command(import_)
