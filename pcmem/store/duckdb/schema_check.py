"""Is the store's schema the one its migrations made, and is a scope's head sound — checked before anything is written.

A damaged file used to be opened and written to before it was refused: with a renamed column a remember committed
and only the next read failed; with its migrations table cut short the open re-ran migrations that were already
applied, failed half-way and left a log behind; with a scope's head past its last revision a write added revision
10 after revision 2. Now the open verifies the tables and columns against the migrations the file records
(:func:`verify_schema`), and the first write to each scope in a process verifies that scope's head
(:func:`verify_head`, before that write's transaction); a refusal is a StoreFormatError naming what is wrong, and the
file is left as it was.

The columns each migration adds to the truth's tables are declared here (tests/store/test_schema_check.py builds a store
migration by migration and holds the declarations to what the migrations really create).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pcmem.errors import StoreFormatError
from pcmem.types.memory import MemoryRef

#: The tables of the truth — what no repair can rebuild — and the columns each migration adds to them (pcmem_meta and
#: pcmem_migrations come with the first). The derived tables (head_entries, the full-text index, the vectors) are left
#: to ``pcmem check``, whose ``--repair`` rebuilds them from the truth: refusing to open a store without them would
#: refuse the repair too.
ADDED_BY: dict[str, dict[str, frozenset[str]]] = {
    "0001_core_schema": {
        "main.pcmem_meta": frozenset({"key", "value"}),
        "main.pcmem_migrations": frozenset({"seq", "name", "applied_at"}),
        "main.memories": frozenset({"artifact_id", "scope", "head_revision", "created_at", "updated_at"}),
        "main.revisions": frozenset({"artifact_id", "revision", "operation", "change_count", "created_at"}),
        "main.entry_versions": frozenset({"entry_version_id", "artifact_id", "entry_id", "version", "kind", "text",
                                          "content_hash", "metadata", "created_in_revision", "created_at"}),
        "main.entry_events": frozenset({"artifact_id", "revision", "entry_id", "entry_version_id", "state"}),
    },
    "0002_search_projections": {"main.embedding_profile": frozenset({"model_id", "dimension", "normalized"})},
    "0004_embedding_roles": {"main.embedding_profile": frozenset({"role"})},
    "0008_revision_reasons": {"main.revisions": frozenset({"reason"})},
}
#: Migrations that run again harmlessly (``ADD COLUMN IF NOT EXISTS``): their effect without their record is no sign
#: of a migrations table cut short.
REPEATABLE = frozenset({"0008_revision_reasons"})

_ADVICE = ("pcmem refuses to read or write it and left it unchanged; restore a backup (`pcmem check` reports the same "
           "and cannot repair it: the damage is in pcmem's own records)")


def expected_columns(applied: list[str]) -> dict[str, frozenset[str]]:
    """The tables and columns a file with these migrations applied has (at least)."""
    expected: dict[str, frozenset[str]] = {}
    for name in applied:
        for table, columns in ADDED_BY.get(name, {}).items():
            expected[table] = expected.get(table, frozenset()) | columns
    return expected


def _columns(db: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """Every table's column names, read from the ``CREATE TABLE`` statements DuckDB keeps for them: ``duckdb_tables()``
    answers in a fraction of what ``duckdb_columns()`` costs on a store's first query (paid at every open)."""
    return {f"{schema}.{table}": set(column_names(sql)) for schema, table, sql in db.execute(
        "SELECT schema_name, table_name, sql FROM duckdb_tables() WHERE database_name = current_database()").fetchall()}


_CONSTRAINTS = ("PRIMARY KEY", "UNIQUE", "CHECK", "FOREIGN KEY", "CONSTRAINT")


def column_names(sql: str) -> list[str]:
    """The column names of DuckDB's ``CREATE TABLE name(column TYPE ..., ..., PRIMARY KEY(...));`` statement: the
    first word of each element of the outer parentheses (split at commas outside parentheses, brackets and quotes)
    that is not a table constraint; a quoted name (``"key"``) unquoted."""
    body = sql[sql.index("(") + 1:sql.rindex(")")]
    parts, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(body):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(body[start:index].strip())
            start = index + 1
    parts.append(body[start:].strip())
    names = []
    for part in parts:
        if not part or part.upper().startswith(_CONSTRAINTS):
            continue
        if part.startswith('"'):
            end = part.index('"', 1)
            while part[end + 1:end + 2] == '"':  # a doubled quote inside the name
                end = part.index('"', end + 2)
            names.append(part[1:end].replace('""', '"'))
        else:
            names.append(part.split()[0])
    return names


def verify_schema(db: duckdb.DuckDBPyConnection, path: Path, known: list[str]) -> None:
    """Refuse (StoreFormatError) a pcmem file whose migrations table is not 1..N in order, whose tables lack a
    column its applied migrations made, or that holds what a migration it does not record adds (the migrations table
    was cut short: re-running them would fail half-way). ``known`` is every migration's name, in order."""
    found = _columns(db)
    if "main.pcmem_meta" not in found:
        return  # not a pcmem file (yet): a new store, or someone else's (the migrations refuse that one)
    if "main.pcmem_migrations" not in found:
        _refuse(path, "the table main.pcmem_migrations is missing")
    recorded = db.execute("SELECT seq, name FROM pcmem_migrations ORDER BY seq").fetchall()
    applied = [name for _, name in recorded]
    if any(name not in known for name in applied):
        return  # a newer pcmem's file: the migrations say so (StoreVersionError)
    if [seq for seq, _ in recorded] != list(range(1, len(recorded) + 1)) or applied != known[:len(applied)]:
        _refuse(path, f"its migrations table is damaged (it lists {', '.join(applied) or 'none'})")
    problems = [_missing(table, columns, found.get(table)) for table, columns in expected_columns(applied).items()]
    problems += [f"{table}.{column} (from {name}, which it does not record: the migrations table was cut short)"
                 for name in known[len(applied):] if name not in REPEATABLE
                 for table, columns in ADDED_BY.get(name, {}).items()
                 for column in sorted(columns) if column in found.get(table, ())]
    problems = [problem for problem in problems if problem]
    if problems:
        _refuse(path, "; ".join(problems[:5]) + (" …" if len(problems) > 5 else ""))


def _missing(table: str, wanted: frozenset[str], present: set[str] | None) -> str:
    if present is None:
        return f"the table {table} is missing"
    missing = sorted(wanted - present)
    if not missing:
        return ""
    others = sorted(present - wanted)
    return f"{table} has no column {', '.join(missing)}" + (f" (it has {', '.join(others)})" if others else "")


def verify_head(db: duckdb.DuckDBPyConnection, path: Path, memory: MemoryRef) -> None:
    """Refuse (StoreFormatError) to write a scope whose head names a revision that is not its last one, or whose head
    entries name versions that are gone (not erased): a write would build on a head the file does not hold."""
    last, lost = db.execute(
        "SELECT (SELECT max(revision) FROM revisions WHERE artifact_id = $id), "
        "(SELECT count(*) FROM head_entries h WHERE h.artifact_id = $id AND h.state <> 'erased' AND NOT EXISTS "
        "(SELECT 1 FROM entry_versions v WHERE v.entry_version_id = h.entry_version_id))",
        {"id": memory.artifact_id}).fetchone()
    if last != memory.revision:
        _refuse(path, f"scope {memory.scope!r} names revision {memory.revision} as its head, but its last revision "
                      f"is {last}", advice="nothing was written; restore a backup (`pcmem check` lists the damage)")
    if lost:
        _refuse(path, f"{lost} head entries of scope {memory.scope!r} name versions the file does not hold",
                advice="nothing was written; `pcmem check --repair` rebuilds the head from the event log")


def _refuse(path: Path, what: str, advice: str = _ADVICE) -> None:
    raise StoreFormatError(f"{path}: the store is damaged: {what}; {advice}")
