"""What a DuckDB store keeps in ``pcmem_meta`` for every process that opens it: the secret its paging cursors are
signed with, and its default fusion.

Both are read once and kept: a held file changes only through the process that holds it (every other process reaches
it through that owner, :mod:`pcmem.owner`). The secret never changes once made.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

import duckdb

from pcmem.settings import SearchFusion
from pcmem.store.common import (
    PAGING_SECRET_KEY,
    SEARCH_FUSION_KEY,
    PagingSecret,
    new_paging_secret,
    stored_search_fusion,
)
from pcmem.store.duckdb import reads

Transaction = Callable[..., AbstractContextManager[duckdb.DuckDBPyConnection]]


class MetaSettings:
    """The paging secret and the default fusion of one backend's store file."""

    def __init__(self, transaction: Transaction, write_lock: threading.Lock, *, read_only: bool) -> None:
        self._transaction, self._write_lock = transaction, write_lock
        self._read_only = read_only
        self._paging_secret = PagingSecret()
        self._search_fusion: list[str | None] = []  # the default fusion as kept, once read: [value]

    def load(self, cursor: duckdb.DuckDBPyConnection) -> None:
        """Read both with the store's open (one statement on its cursor), before any transaction."""
        rows = dict(cursor.execute("SELECT key, value FROM pcmem_meta WHERE key IN (?, ?)",
                                   [PAGING_SECRET_KEY, SEARCH_FUSION_KEY]).fetchall())
        self._search_fusion[:] = [rows.get(SEARCH_FUSION_KEY)]
        if rows.get(PAGING_SECRET_KEY) is not None:
            self._paging_secret.get(lambda: rows[PAGING_SECRET_KEY])

    def paging_secret(self) -> bytes:
        return self._paging_secret.get(self._stored_paging_secret)

    def _stored_paging_secret(self) -> str | None:
        with self._transaction() as cursor:
            secret = reads.meta(cursor, PAGING_SECRET_KEY)
        if secret is not None or self._read_only:
            return secret
        with self._write_lock, self._transaction(write=True) as cursor:
            cursor.execute("INSERT INTO pcmem_meta SELECT $key, $value WHERE NOT EXISTS "
                           "(SELECT 1 FROM pcmem_meta WHERE key = $key)",
                           {"key": PAGING_SECRET_KEY, "value": new_paging_secret()})
            return reads.meta(cursor, PAGING_SECRET_KEY)

    def search_fusion_default(self) -> SearchFusion | None:
        """The store's default fusion (StoreFormatError for a name this pcmem does not know, at each search that
        needs it: the store opens and writes as before)."""
        if not self._search_fusion:
            with self._transaction() as cursor:
                self._search_fusion[:] = [reads.meta(cursor, SEARCH_FUSION_KEY)]
        return stored_search_fusion(self._search_fusion[0])

    def set_search_fusion_default(self, fusion: SearchFusion | None) -> None:
        with self._write_lock, self._transaction(write=True) as cursor:
            cursor.execute("DELETE FROM pcmem_meta WHERE key = ?", [SEARCH_FUSION_KEY])
            if fusion is not None:
                cursor.execute("INSERT INTO pcmem_meta VALUES (?, ?)", [SEARCH_FUSION_KEY, fusion])
        self._search_fusion[:] = [fusion]
