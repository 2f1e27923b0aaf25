"""Seed a store with hash vectors, or switch its embedder (``runtime.reindex``) slowly enough for a SIGKILL to land
mid-switch: the chaos campaign's killed reindex.

Usage: ``reindex_worker.py STORE seed COUNT`` or ``reindex_worker.py STORE switch``."""

from __future__ import annotations

import sys

import pcmem
from pcmem.testing import HashEmbedder

# a model takes time (2 ms a text): the kill lands mid-switch
OLD = HashEmbedder("bench/old", 32, by="text", delay=0.002)
NEW = HashEmbedder("bench/new", 48, by="text", delay=0.002)


def main(path: str, phase: str, *rest: str) -> None:
    if phase == "seed":
        with pcmem.open(path, embedder=OLD) as runtime:
            runtime.memory.for_scope("chaos").remember(pcmem.RememberRequest(entries=tuple(
                pcmem.NewEntry(text=f"seeded note {i}") for i in range(int(rest[0])))))
        print("seeded", flush=True)
    else:
        with pcmem.open(path, embedder=OLD) as runtime:
            print("switching", flush=True)
            runtime.reindex(embedder=NEW)
            print("switched", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
