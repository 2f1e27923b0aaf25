"""Remember batches of keyed entries until killed; every acknowledged batch is printed.

Usage: ``keyed_writer.py STORE`` (``pcmem bench crash``, the chaos campaign)."""

from __future__ import annotations

import sys

import pcmem
from pcmem import NewEntry, RememberRequest


def main(path: str) -> None:
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("crash")
        i = 0
        while True:
            ids = [f"k{i}-{j}" for j in range(3)]
            memory.remember(RememberRequest(entries=tuple(
                NewEntry(entry_id=entry_id, text=f"keyed write {i} part {j}") for j, entry_id in enumerate(ids))))
            print(" ".join(ids), flush=True)
            i += 1


if __name__ == "__main__":
    main(sys.argv[1])
