"""Four threads remembering in one scope of one runtime until killed, so their writes commit in groups (issue #30,
:mod:`pcmem.store.duckdb.write_groups`); prints ``ENTRY_ID GROUPS`` for each acknowledged write (the call returned),
GROUPS being how many transactions so far committed more than one write.

Usage: ``group_writer.py STORE`` (tests/store/test_write_groups.py SIGKILLs it and checks every acknowledged entry)."""

from __future__ import annotations

import sys
import threading

import pcmem
from pcmem import NewEntry
from pcmem.store.duckdb import DuckDBBackend

THREADS = 4


def main(path: str) -> None:
    printing = threading.Lock()
    with pcmem.open(path, embedder=None) as runtime:
        backend = runtime.backend
        assert isinstance(backend, DuckDBBackend)
        memory = runtime.memory.for_scope("groups")

        def write(worker: int) -> None:
            for i in range(1_000_000):
                entry_id = f"t{worker}-{i}"
                memory.remember(NewEntry(entry_id=entry_id, text=f"thread {worker} write {i} " + "x" * 100))
                with printing:
                    print(entry_id, backend.write_groups.stats.groups, flush=True)

        threads = [threading.Thread(target=write, args=(worker,), daemon=True) for worker in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


if __name__ == "__main__":
    main(sys.argv[1])
