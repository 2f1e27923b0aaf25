"""``pcmem check``: verify a store file; ``--repair`` rebuilds derived data."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from pcmem.cli import render
from pcmem.compose.backends import open_backend
from pcmem.errors import StoreFormatError
from pcmem.settings import lock_timeout
from pcmem.store import engines
from pcmem.store.port import FileMaintenance

if TYPE_CHECKING:
    from pcmem.store.engine import StorageEngine, StoreLocation
    from pcmem.store.engine_values import LogRecovery
    from pcmem.store.port import StorageBackend


@click.command()
@click.option("--repair", is_flag=True, help="Rebuild the head projection and full-text index from the event log.")
@click.option("--recover-wal", is_flag=True,
              help="Before checking: keep the complete transactions of a damaged leftover write-ahead log and set the "
                   "rest aside in a copy (FILE.wal.damaged).")
@render.json_option
def check(repair: bool, recover_wal: bool, as_json: bool) -> None:
    """Check migrations, the revision chain, entry hashes and that search projections agree with every head.

    Exits 1 when problems remain. Without --repair nothing is changed.

    \b
    Examples:
      pcmem check --json
      pcmem --db memory.duckdb check --recover-wal    # after "cannot be replayed completely"
    """
    engine, location = engines.located(click.get_current_context().obj.path)
    recovery = engine.recover_log(location) if recover_wal else None
    backend = _open_store(engine, location)
    try:
        store_file = require_file_maintenance(backend, "pcmem check")
        report = store_file.repair() if repair else store_file.check()
    finally:
        backend.close()
    result = {"ok": report.ok, "problems": report.problems, "scopes": report.scopes, "revisions": report.revisions,
              "entry_versions": report.entry_versions, "tombstones": report.tombstones, "notes": report.notes,
              "damaged_blocks": report.damaged_blocks, "log_copies": report.log_copies,
              "repaired": repair and not report.damaged_blocks}
    if recovery is not None:
        result["recovered_wal"] = {"kept_transactions": recovery.kept_transactions,
                                   "dropped_bytes": recovery.dropped_bytes,
                                   "copy": None if recovery.copy is None else str(recovery.copy)}
    if as_json:
        render.emit_json(result)
    else:
        if recovery is not None:
            render.console.print(_describe(recovery))
        verdict = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        render.console.print(f"{verdict}: {report.scopes} scopes, {report.revisions} revisions, "
                             f"{report.entry_versions} entry versions, {report.tombstones} forgotten entries"
                             + (" (after repair)" if result["repaired"] else ""))
        for problem in report.problems:
            render.console.print(f"  - {problem}")
        for note in report.notes:
            render.console.print(f"  {note}")
    if not report.ok:
        sys.exit(1)


def _open_store(engine: StorageEngine, location: StoreLocation) -> StorageBackend:
    """The store alone, no runtime: nothing to embed, nothing adopted. A file that cannot be opened because a block
    it reads on opening is damaged is opened again without index lookups (a damaged index then stops nothing), so
    the check can say what is damaged instead of failing on it."""
    try:
        return open_backend(location, create=False, lock_timeout=lock_timeout())
    except StoreFormatError:
        if not engine.damaged(location):
            raise
    return open_backend(location, create=False, lock_timeout=lock_timeout(), index_lookups=False)


def _describe(recovery: LogRecovery) -> str:
    if recovery.copy is None:
        return "write-ahead log: nothing to recover (absent or complete)"
    return (f"write-ahead log: kept {recovery.kept_transactions} complete transaction(s), set {recovery.dropped_bytes} "
            f"unreadable bytes aside; the whole log as it was is in {recovery.copy} (the next `pcmem forget` "
            "overwrites and deletes it: it may hold the text of entries)")


def require_file_maintenance(backend: object, what: str) -> FileMaintenance:
    """``backend`` as a store file that pcmem checks and repairs itself (:class:`~pcmem.store.port.FileMaintenance`:
    DuckDB); other engines keep their own integrity (CapabilityNotSupportedError naming ``what``)."""
    if not isinstance(backend, FileMaintenance):
        from pcmem.errors import CapabilityNotSupportedError

        raise CapabilityNotSupportedError(f"{what} works on DuckDB store files; {backend!r} is checked by its engine")
    return backend


def register(group: click.Group) -> None:
    group.add_command(check)
