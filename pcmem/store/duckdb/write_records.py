"""The ``recorded_writes`` table: a write's idempotency key and outcome, kept with the write (see
:mod:`pcmem.memory.write_records`), as SQL built by functions and run by the write transaction (:mod:`.write`).

One row per key (its primary key: a key recorded twice is refused by DuckDB, and the transaction with it). No row
holds an entry's text, so erasure has nothing to clear here. Rows are dropped by the writes themselves
(:func:`prune_sql`, see :data:`pcmem.store.common.RECORDS_KEPT_FOR`): no sweeper, no table that only grows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb

from pcmem.store import common
from pcmem.store.common import utc
from pcmem.store.duckdb.connection import literal
from pcmem.store.duckdb.rows import sql_value, values
from pcmem.types.storage import WriteRecord

TABLE = "recorded_writes"


def create(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(f"""
        CREATE TABLE IF NOT EXISTS {TABLE} (
            idempotency_key VARCHAR PRIMARY KEY,
            scope VARCHAR NOT NULL,
            operation VARCHAR NOT NULL,
            fingerprint VARCHAR NOT NULL,
            outcome VARCHAR NOT NULL,
            recorded_at TIMESTAMP NOT NULL
        )""")


def lookup_sql(key: str) -> str:
    return (f"SELECT scope, operation, fingerprint, outcome, recorded_at FROM {TABLE} "
            f"WHERE idempotency_key = {literal(key)}")


def from_row(key: str, row: tuple[Any, ...]) -> WriteRecord:
    scope, operation, fingerprint, outcome, recorded_at = row
    return WriteRecord(key=key, scope=scope, operation=operation, fingerprint=fingerprint, outcome=outcome,
                       recorded_at=utc(recorded_at))


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value


def insert_sql(record: WriteRecord) -> str:
    return f"INSERT INTO {TABLE} VALUES " + values([(record.key, record.scope, record.operation, record.fingerprint,
                                                       record.outcome, _naive_utc(record.recorded_at))])


def prune_sql(now: datetime) -> str:
    """Drop the records past their keeping time as of ``now`` (see :mod:`pcmem.store.common`)."""
    expired, young = (sql_value(_naive_utc(cutoff)) for cutoff in common.prune_cutoffs(now))
    return (f"DELETE FROM {TABLE} WHERE recorded_at < {expired} OR (recorded_at < {young} AND idempotency_key IN "
            f"(SELECT idempotency_key FROM {TABLE} ORDER BY recorded_at DESC, idempotency_key "
            f"OFFSET {int(common.RECORDS_KEPT_AT_MOST)}))")
