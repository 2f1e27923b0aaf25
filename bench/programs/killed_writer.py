"""Write three notes to a scope, acknowledge, then die without closing (its log stays behind).

Usage: ``killed_writer.py STORE SCOPE`` (the file chaos trials, and the log-ownership tests)."""

from __future__ import annotations

import os
import sys

import pcmem


def main(path: str, scope: str) -> None:
    runtime = pcmem.open(path, embedder=None)
    memory = runtime.memory.for_scope(scope)
    for i in range(3):
        memory.remember(f"note {i} of " + scope)
    print("acknowledged", flush=True)
    os.kill(os.getpid(), 9)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
