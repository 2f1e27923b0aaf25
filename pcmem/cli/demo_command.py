"""``pcmem demo``: seed a sample scope so a new user sees real memory at once."""

from __future__ import annotations

import click

from pcmem.cli import render
from pcmem.cli.demo_data import DEMO_EDITS, DEMO_ENTRIES, DEMO_SCOPE
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.types.memory import ListRequest, NewEntry, RememberRequest, RetireRequest, ReviseRequest


def seed_demo(memory: SyncScopedMemory) -> bool:
    """Write the sample entries and edits into ``memory``; returns False when the scope already had memory."""
    if memory.head() is not None:
        return False
    entries = tuple(NewEntry(entry_id=eid, kind=kind, text=text, metadata=meta) for eid, kind, text, meta in DEMO_ENTRIES)
    head = memory.remember(RememberRequest(entries=entries, expected_revision=0)).memory.revision
    for operation, entry_id, text in DEMO_EDITS:
        if operation == "revise":
            head = memory.revise(ReviseRequest(entry_id=entry_id, text=text, expected_revision=head)).memory.revision
        else:
            head = memory.retire(RetireRequest(entry_id=entry_id, expected_revision=head)).memory.revision
    return True


@click.command()
@click.option("--scope", "-s", default=DEMO_SCOPE, show_default=True, help="Scope to seed.")
@render.json_option
def demo(scope: str, as_json: bool) -> None:
    """Seed a small sample memory (a team shipping a desktop app) and show it.

    Safe to run twice: an existing scope is left as it is.

    \b
    Example:
      pcmem demo && pcmem history --scope pcmem-demo release-day
    """
    store = click.get_current_context().obj
    memory = store.runtime.memory.for_scope(scope)
    created = seed_demo(memory)
    page = memory.list(ListRequest(state="all"))
    if as_json:
        render.emit_json({"db": str(store.path), "created": created, "page": page})
        return
    verb = "seeded" if created else "already present:"
    render.console.print(f"{verb} scope {scope!r} in {store.path}")
    render.table(
        f"{scope} @ revision {page.memory.revision}",
        ("entry", "kind", "ver", "state", "text"),
        [(e.entry.entry_id, e.entry.kind, f"v{e.entry.version}", e.state, render.preview(e.entry.text, 60))
         for e in page.entries],
    )
    render.console.print(
        f"\nTry: pcmem history --scope {scope} release-day    pcmem list --scope {scope} --revision 1 --all"
    )


def register(group: click.Group) -> None:
    group.add_command(demo)
