"""An app that creates a store through the library and writes one note (the chaos campaign's creation race: another
user must never get a handle on the new file). Usage: ``library_creator.py STORE``."""

from __future__ import annotations

import sys

import pcmem


def main(path: str) -> None:
    with pcmem.open(path, embedder=None) as runtime:
        runtime.memory.for_scope("s").remember("created by the library")


if __name__ == "__main__":
    main(sys.argv[1])
