"""A writer beside the TUI (``python -m pcmem_bench.tui_timings --big``): an agent's note every 0.75 s into one scope
until it is killed. Usage: ``scope_writer.py STORE SCOPE EMBEDDER`` (``none``, or ``auto`` for the store's own: a
store seeded with vectors refuses a write without them). Opened after the TUI, it is a client of the TUI's process."""

from __future__ import annotations

import sys
import time

import pcmem


def main(path: str, scope: str, embedder: str) -> None:
    with pcmem.open(path, embedder=None if embedder == "none" else "auto") as runtime:
        memory = runtime.memory.for_scope(scope)
        print("writing", flush=True)
        for n in range(100000):
            memory.remember(f"An agent's note number {n}.")
            time.sleep(0.75)


if __name__ == "__main__":
    main(*sys.argv[1:4])
