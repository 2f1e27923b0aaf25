"""``pcmem show``: one entry, by entry id or by citation.

Apart from the other memory commands (:mod:`pcmem.cli.memory_commands`) so that beside a running owner it loads
neither pydantic nor the client runtime (:mod:`pcmem.cli.owner_reads`): the text is printed from the entry's JSON,
which is what the owner sends and what the full path's model dumps.
"""

from __future__ import annotations

from typing import Any

import click

from pcmem.cli import owner_reads, render


@click.command()
@render.scope_option
@click.option("--revision", "-r", type=int, default=None, help="Show the entry as it stood in this revision.")
@click.argument("ref")
@render.json_option
def show(scope: str, revision: int | None, ref: str, as_json: bool) -> None:
    """Show one entry by entry id, or exactly by citation (artifact@revision/entry/version).

    \b
    Example:
      pcmem show --scope project ent_01jd5f2m3x…
    """
    entry = owner_reads.entry_answered(click.get_current_context().obj, scope, ref, revision)
    if entry is None:
        from pcmem.cli.memory_commands import lookup, read_scope

        entry = lookup(read_scope(scope), ref, revision).model_dump(mode="json")
    if as_json:
        render.emit_json(entry)
    else:
        _print_entry(entry)


def _print_entry(entry: dict[str, Any]) -> None:
    """An entry (as its model dumps it to JSON) for people: its version, state, citation, hash, metadata, text."""
    version, cited = entry["entry"], entry["citation"]
    render.console.print(f"{version['entry_id']} v{version['version']} ({version['kind']}, {entry['state']})",
                         style="bold")
    render.console.print("citation: {artifact_id}@{revision}/{entry_id}/{entry_version_id}".format(**cited))
    render.console.print(f"sha256:   {version['content_hash']}")
    if version["metadata"]:
        render.console.print(f"metadata: {version['metadata']}")
    render.console.print()
    render.console.print(version["text"])


def register(group: click.Group) -> None:
    group.add_command(show)
