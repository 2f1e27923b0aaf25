"""One of the chaos campaign's processes on a shared store: a writer (remember, and CAS revise of its own newest
entry) or a searcher. Prints one JSON line per operation: ``["op"]``, ``["ack", citation]``, ``["typed", class,
message]`` or ``["untyped", class, message]``.

Usage: ``chaos_worker.py STORE write|search NAME COUNT``."""

from __future__ import annotations

import json
import sys
from typing import Any

import pcmem
from pcmem import SyncScopedMemory
from pcmem.errors import PcmemError
from pcmem.types.memory import NewEntry, ReviseRequest
from pcmem.types.search import SearchMemoryRequest


def say(*fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def operate(memory: SyncScopedMemory, role: str, name: str, i: int, mine: list[str]) -> None:
    if role == "search":
        memory.search(SearchMemoryRequest(query=f"kiwi {i}", mode="fts"))
        say("op")
    elif i % 3 == 2 and mine:
        head = memory.head()
        assert head is not None  # this worker has written
        result = memory.revise(ReviseRequest(entry_id=mine[-1], text=f"{name} revised {i} kiwi",
                                             expected_revision=head.revision))
        say("ack", result.citations[0].model_dump())
    else:
        result = memory.remember(NewEntry(entry_id=f"{name}-{i}", text=f"{name} note {i} kiwi"))
        mine.append(f"{name}-{i}")
        say("ack", result.citations[0].model_dump())


def main(path: str, role: str, name: str, count: int) -> None:
    try:
        runtime = pcmem.open(path, embedder=None, lock_timeout=60)
    except PcmemError as error:
        say("typed", type(error).__name__, str(error))
        sys.exit(0)
    memory = runtime.memory.for_scope("chaos")
    mine: list[str] = []
    for i in range(count):
        try:
            operate(memory, role, name, i, mine)
        except PcmemError as error:
            say("typed", type(error).__name__, str(error))
        except Exception as error:  # noqa: BLE001 - an untyped error is the finding, reported and counted
            say("untyped", type(error).__name__, str(error))
    runtime.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
