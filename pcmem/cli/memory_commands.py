"""Commands that read and write one scope's memory."""

from __future__ import annotations

from pathlib import Path

import click

from pcmem.cli import render
from pcmem.cli.jsonl import STDIN, read_text
from pcmem.cli.progress import progress_bar
from pcmem.cli.render import scope_option
from pcmem.errors import InputError, NotFoundError
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.types.memory import (
    Citation,
    EntryPage,
    ListRequest,
    MemoryEntry,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    WriteResult,
)
from pcmem.validation import parse_metadata_json

expected_option = click.option(
    "--expected-revision",
    type=int,
    default=None,
    help="Compare-and-swap on the scope: fail unless this is its head revision (any write to the scope conflicts).",
)
reason_option = click.option(
    "--reason", default=None,
    help="Why this write is made (kept with its revision; shown by history and changes).",
)
expected_version_option = click.option(
    "--expected-version",
    type=int,
    default=None,
    help="Compare-and-swap on the entry only: fail unless the entry is at this version (other entries may change). "
         "Default, when neither is given: the version the command reads first.",
)


def _scope(scope: str) -> SyncScopedMemory:
    """The scope for a command that writes (creates the store if needed)."""
    return click.get_current_context().obj.runtime.memory.for_scope(scope)


def read_scope(scope: str) -> SyncScopedMemory:
    """The scope for a command that only reads (never creates a store)."""
    return click.get_current_context().obj.reader.memory.for_scope(scope)


def _gated_scope(scope: str, model: str | None, as_json: bool) -> SyncScopedMemory:
    """The scope with a write gate on the configured decision model (``--write-gate``)."""
    from pcmem.compose.decisions import write_gate_model
    from pcmem.config import InferenceConfig

    inference = InferenceConfig.from_env(generation_model=model)
    with progress_bar("verifying model", enabled=not as_json, bytes_=True) as advance:
        gate_model = write_gate_model(inference, advance)
    runtime = click.get_current_context().obj.runtime
    runtime.use_write_gate(gate_model)
    return runtime.memory.for_scope(scope)


gate_options = [
    click.option("--write-gate", is_flag=True,
                 help="Ask the decision model whether an existing entry already states it; skip duplicates."),
    click.option("--allow-duplicates", is_flag=True, help="With --write-gate: report duplicates but add anyway."),
    click.option("--model", metavar="PROVIDER:NAME", default=None,
                 help="Decision model for --write-gate (default: $POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL)."),
]


def _with_gate_options(function):  # noqa: ANN001, ANN202 - click decorator plumbing
    for option in reversed(gate_options):
        function = option(function)
    return function


def _expectations(memory: SyncScopedMemory, entry_id: str, revision: int | None,
                  version: int | None) -> tuple[int | None, int | None]:
    """(expected_revision, expected_version) of a revise/retire/reactivate. Without either option the command
    compares the entry's version as it reads it now: a write to this entry in between is a conflict, writes to other
    entries of the scope are not (the scope's head would make every concurrent writer of the scope collide)."""
    if revision is not None or version is not None:
        return revision, version
    return None, memory.get_entry(entry_id).entry.version


def _print_write(result: WriteResult, verb: str, as_json: bool) -> None:
    if as_json:
        render.emit_json(result)
        return
    if result.unchanged:
        ids = ", ".join(result.unchanged_entry_ids) or ", ".join(c.entry_id for c in result.citations)
        render.console.print(f"unchanged: {ids or 'nothing to change'} (revision {result.memory.revision} stays "
                             "the head)")
        return
    for duplicate in result.duplicates:
        render.console.print(f"skipped (already stated by {duplicate.existing}): {render.preview(duplicate.text, 60)}")
    if not result.citations:
        return
    count = len(result.citations)
    noun = "entry" if count == 1 else "entries"
    render.console.print(f"{verb} {count} {noun} in {result.memory.scope!r} → revision {result.memory.revision}")
    for citation in result.citations[:20]:
        render.console.print(f"  {citation}")
    if count > 20:
        render.console.print(f"  … and {count - 20} more")


def creation_order(memory: SyncScopedMemory, page: EntryPage) -> list[MemoryEntry]:
    """The entries in the order they were remembered (the revision that created each; ties by id). Generated ids
    are random within one batch, so id order reads as no order at all. A revised entry's creation is read from the
    changes (one more read, only when some entry was revised)."""
    created = {e.entry.entry_id: e.entry.created_in_revision for e in page.entries}
    if page.memory is not None and any(e.entry.version > 1 for e in page.entries):
        for change in memory.changes(0).changes:
            if change.operation == "remember" and change.entry_id in created:
                created[change.entry_id] = min(created[change.entry_id], change.revision)
    return sorted(page.entries, key=lambda e: (created[e.entry.entry_id], e.entry.entry_id))


def _print_entries(scope: str, page: EntryPage, as_json: bool, entries: list[MemoryEntry] | None = None) -> None:
    if as_json:
        render.emit_json(page)
        return
    rows = [
        (e.entry.entry_id, e.entry.kind, f"v{e.entry.version}", e.state, render.preview(e.entry.text, 60))
        for e in (page.entries if entries is None else entries)
    ]
    where = f"{scope} @ revision {page.memory.revision}" if page.memory else f"{scope} (no memory yet)"
    render.table(f"{where} — {len(rows)} entries", ("entry", "kind", "ver", "state", "text"), rows)
    if page.next_cursor:
        render.console.print(f"more: --cursor {page.next_cursor}")


@click.command()
@scope_option
@click.option("--kind", "-k", default="fact", show_default=True, help="An open label: fact, preference, event, …")
@click.option("--metadata", "-m", default=None, help='A small JSON object, e.g. \'{"turn": "D1:3"}\'.')
@click.option("--id", "entry_id", default=None, help="Choose the entry id (printable ASCII, ≤128). Default: generated.")
@click.option("--upsert", is_flag=True,
              help="With --id: write a new version when the entry exists and differs; report unchanged when equal.")
@expected_option
@reason_option
@_with_gate_options
@click.argument("text")
@render.json_option
def remember(scope: str, kind: str, metadata: str | None, entry_id: str | None, upsert: bool,
             expected_revision: int | None, reason: str | None, write_gate: bool, allow_duplicates: bool,
             model: str | None, text: str, as_json: bool) -> None:
    """Remember TEXT in a scope (one new revision). TEXT ``-`` reads it from standard input.

    \b
    Examples:
      pcmem remember --scope project --kind decision "Releases go out on Fridays."
      pcmem remember --scope user:ana --id city --upsert --reason "she moved" "Ana lives in Lisbon."
      pcmem remember --scope project --write-gate --model llama-cpp:qwen2.5-coder-1.5b-instruct "Deploys: Fridays"
    """
    if upsert and entry_id is None:
        raise InputError("--upsert needs --id (the key to update)")
    if text == STDIN:
        text = read_text(Path(STDIN))
    entry = NewEntry(text=text, kind=kind, entry_id=entry_id,
                     metadata=parse_metadata_json(metadata) if metadata is not None else None)
    request = RememberRequest(entries=(entry,), expected_revision=expected_revision, allow_duplicates=allow_duplicates,
                              upsert=upsert, reason=reason)
    memory = _gated_scope(scope, model, as_json) if write_gate else _scope(scope)
    result = memory.remember(request)
    _print_write(result, "remembered", as_json)


@click.command("list")
@scope_option
@click.option("--all", "include_retired", is_flag=True, help="Include retired entries.")
@click.option("--revision", "-r", type=int, default=None, help="List the exact manifest of a past revision.")
@click.option("--limit", type=int, default=None, help="At most this many entries (1..100); prints a cursor for more.")
@click.option("--cursor", default=None, help="Continue a listing from its next_cursor.")
@render.json_option
def list_(scope: str, include_retired: bool, revision: int | None, limit: int | None, cursor: str | None,
          as_json: bool) -> None:
    """List a scope's entries at the head or at a past revision (a scope with no memory lists nothing), oldest
    first (pages and --json: by entry id, the order a cursor continues in).

    \b
    Example:
      pcmem list --scope project --all --revision 3
      pcmem list --scope project --limit 50 --cursor eyJ…
    """
    request = ListRequest(state="all" if include_retired else "active", revision=revision, limit=limit, cursor=cursor)
    memory = read_scope(scope)
    page = memory.list(request)
    # A whole listing reads in creation order; pages (--limit/--cursor) and --json keep the store's id order,
    # which is the order the cursor continues in.
    whole = not as_json and cursor is None and page.next_cursor is None
    _print_entries(scope, page, as_json, creation_order(memory, page) if whole else None)


def lookup(memory: SyncScopedMemory, ref: str, revision: int | None) -> MemoryEntry:
    """REF is a citation when it parses as one and names an entry; otherwise an entry id (ids may contain '@')."""
    try:
        citation = Citation.parse(ref)
    except InputError:
        return memory.get_entry(ref, revision)
    try:
        return memory.get(citation)
    except NotFoundError:
        try:
            return memory.get_entry(ref, revision)
        except (NotFoundError, InputError):
            pass
        raise


def _with_reasons(columns: tuple[str, ...], rows: list[tuple[object, ...]],
                  reasons: list[str | None]) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
    """A table of revisions gets a reason column only when some write said why (most give none)."""
    if not any(reasons):
        return columns, rows
    return (*columns, "reason"), [(*row, reason or "") for row, reason in zip(rows, reasons, strict=True)]


@click.command()
@scope_option
@click.argument("entry_id")
@render.json_option
def history(scope: str, entry_id: str, as_json: bool) -> None:
    """Show every revision that changed ENTRY_ID.

    \b
    Example:
      pcmem history --scope project alice-tea
    """
    result = read_scope(scope).history(entry_id)
    if as_json:
        render.emit_json(result)
        return
    columns: tuple[str, ...] = ("rev", "operation", "state", "ver", "at (UTC)", "text")
    rows: list[tuple[object, ...]] = [
        (e.revision, e.operation, e.state, f"v{e.entry.version}", e.created_at.strftime("%Y-%m-%d %H:%M:%S"),
         render.preview(e.entry.text, 50))
        for e in result.events
    ]
    columns, rows = _with_reasons(columns, rows, [e.reason for e in result.events])
    render.table(f"history of {entry_id} in {scope}", columns, rows)


@click.command()
@scope_option
@click.option("--since", type=int, default=0, show_default=True, help="Changes after this revision.")
@click.option("--limit", type=int, default=None, help="At most this many changes (1..100); prints a cursor for more.")
@click.option("--cursor", default=None, help="Continue from a previous page's next_cursor.")
@render.json_option
def changes(scope: str, since: int, limit: int | None, cursor: str | None, as_json: bool) -> None:
    """List entry changes made after revision --since.

    \b
    Example:
      pcmem changes --scope project --since 12
    """
    page = read_scope(scope).changes(since, limit=limit, cursor=cursor)
    if as_json:
        render.emit_json(page)
        return
    columns: tuple[str, ...] = ("rev", "operation", "entry", "version", "state")
    rows: list[tuple[object, ...]] = [(c.revision, c.operation, c.entry_id, c.entry_version_id, c.state)
                                      for c in page.changes]
    columns, rows = _with_reasons(columns, rows, [c.reason for c in page.changes])
    render.table(f"{scope}: changes after revision {since}", columns, rows)
    if page.next_cursor:
        render.console.print(f"more: --cursor {page.next_cursor}")


@click.command()
@scope_option
@click.option("--kind", "-k", default=None, help="New kind (default: keep).")
@click.option("--metadata", "-m", default=None, help="New metadata JSON object (default: keep).")
@expected_option
@expected_version_option
@reason_option
@click.argument("entry_id")
@click.argument("text")
@render.json_option
def revise(scope: str, kind: str | None, metadata: str | None, expected_revision: int | None,
           expected_version: int | None, reason: str | None, entry_id: str, text: str, as_json: bool) -> None:
    """Write a new version of ENTRY_ID with TEXT.

    \b
    Example:
      pcmem revise --scope project --expected-revision 4 alice-tea "Alice prefers green tea."
    """
    memory = _scope(scope)
    expected_revision, expected_version = _expectations(memory, entry_id, expected_revision, expected_version)
    request = ReviseRequest(
        entry_id=entry_id,
        text=text,
        kind=kind,
        metadata=parse_metadata_json(metadata) if metadata is not None else None,
        expected_revision=expected_revision,
        expected_version=expected_version,
        reason=reason,
    )
    _print_write(memory.revise(request), "revised", as_json)


def _state_command(name: str, request_type: type[RetireRequest] | type[ReactivateRequest], doc: str) -> click.Command:
    @click.command(name, help=doc)
    @scope_option
    @expected_option
    @expected_version_option
    @reason_option
    @click.argument("entry_id")
    @render.json_option
    def command(scope: str, expected_revision: int | None, expected_version: int | None, reason: str | None,
                entry_id: str, as_json: bool) -> None:
        memory = _scope(scope)
        expected_revision, expected_version = _expectations(memory, entry_id, expected_revision, expected_version)
        request = request_type(entry_id=entry_id, expected_version=expected_version,
                               expected_revision=expected_revision, reason=reason)
        result = memory.retire(request) if isinstance(request, RetireRequest) else memory.reactivate(request)
        _print_write(result, f"{name}d", as_json)

    return command


retire = _state_command(
    "retire", RetireRequest,
    "Retire ENTRY_ID (it stays in history and past revisions).\n\n\b\nExample:\n  pcmem retire --scope project alice-tea",
)
reactivate = _state_command(
    "reactivate", ReactivateRequest,
    "Make a retired ENTRY_ID active again.\n\n\b\nExample:\n  pcmem reactivate --scope project alice-tea",
)


@click.command()
@scope_option
@click.option("--all", "whole_scope", is_flag=True, help="Forget every entry of the scope.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.argument("entry_ids", nargs=-1)
@render.json_option
def forget(scope: str, whole_scope: bool, yes: bool, entry_ids: tuple[str, ...], as_json: bool) -> None:
    """Erase ENTRY_IDs (or, with --all, the whole scope) for good: text, metadata and vectors of every version.

    The revision chain keeps a tombstone (the ids and the revision that forgot them); citations of a forgotten
    entry report it as erased. This cannot be undone.

    \b
    Examples:
      pcmem forget --scope user:ana city
      pcmem forget --scope user:ana --all --yes
    """
    if whole_scope == bool(entry_ids):
        raise InputError("name the entries to forget, or pass --all for the whole scope (not both)")
    what = f"every entry of scope {scope!r}" if whole_scope else f"{', '.join(entry_ids)} in scope {scope!r}"
    if not yes:
        click.confirm(f"Erase {what}? Their text and metadata are deleted for good; this cannot be undone.",
                      abort=True, err=True)
    memory = _scope(scope)
    results = [memory.forget_scope()] if whole_scope else [memory.forget(entry_id) for entry_id in entry_ids]
    for result in results:
        _print_write(result, "forgot", as_json)


@click.command()
@render.json_option
def scopes(as_json: bool) -> None:
    """List every scope with entry counts and head revision.

    \b
    Example:
      pcmem scopes --json
    """
    summaries = click.get_current_context().obj.reader.memory.scopes()
    if as_json:
        render.emit_json(summaries)
        return
    rows = [
        (s.scope, s.active_count, s.retired_count, s.head_revision, s.updated_at.strftime("%Y-%m-%d %H:%M:%S"))
        for s in summaries
    ]
    render.table(None, ("scope", "active", "retired", "head", "updated (UTC)"), rows)


@click.command()
@render.json_option
def where(as_json: bool) -> None:
    """Print the store file pcmem uses (from --db, $PCMEM_DB or the per-user default)."""
    from pcmem.store import engines

    path = click.get_current_context().obj.path
    if as_json:
        engine, location = engines.located(path)
        render.emit_json({"db": str(path), "exists": engine.exists(location)})
    else:
        click.echo(str(path))


def register(group: click.Group) -> None:
    for command in (remember, list_, history, changes, revise, retire, reactivate, forget, scopes, where):
        group.add_command(command)
