"""``pcmem import`` as the CLI runs it, with embedding off (so the write transaction starts at once, instead of after
minutes of embedding) and the backend's write announcing when its transaction has begun and when it committed.

Usage: ``import_writer.py STORE JSONL`` (``pcmem bench crash`` kills it inside the transaction)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pcmem.cli as cli
from pcmem.store.duckdb import DuckDBBackend

open_store, write = cli.open_store, DuckDBBackend._write_transaction  # every write transaction (point or group)


@contextmanager
def announced(self: DuckDBBackend, scope: str) -> Iterator[Any]:
    with write(self, scope) as tx:
        print("in-transaction", flush=True)
        yield tx
    print("committed", flush=True)


def main(path: str, source: str) -> None:
    cli.open_store = lambda store, **options: open_store(store, **{**options, "embedder": None})
    DuckDBBackend._write_transaction = announced  # type: ignore[method-assign]
    cli.main(["--db", path, "import", "--scope", "imported", source])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
