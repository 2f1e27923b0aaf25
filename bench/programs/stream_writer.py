"""Remember and revise in one scope until killed, printing each acknowledged revision (``pcmem bench crash``).

Usage: ``stream_writer.py STORE``. Every third call revises the newest entry; the others remember 20 entries."""

from __future__ import annotations

import sys

import pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest


def main(path: str) -> None:
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("crash")
        i = 0
        while True:
            head = memory.head()
            if i % 3 == 2 and head is not None:
                entry = memory.list().entries[0].entry.entry_id
                result = memory.revise(ReviseRequest(entry_id=entry, text=f"revision text {i}",
                                                     expected_revision=head.revision))
            else:
                entries = tuple(NewEntry(entry_id=f"w{i}-{j}", text=f"write {i} part {j} " + "x" * 200)
                                for j in range(20))
                result = memory.remember(RememberRequest(entries=entries))
            print(result.memory.revision, flush=True)  # acknowledged: the call returned
            i += 1


if __name__ == "__main__":
    main(sys.argv[1])
