"""A client under load: keyed upserts and reads until the stop file appears; prints ``ack ID`` for each acknowledged
entry and ``err CLASS MESSAGE`` for each typed error. Usage: ``store_loader.py STORE NAME STOP_FILE [EMBEDDER]``
(``pcmem bench owner``, which SIGKILLs whichever process owns the store; EMBEDDER: ``none``, the default, or
``auto`` beside an owner whose store has a model: a client without one is refused to write there, as in one
process)."""

from __future__ import annotations

import os
import sys

import pcmem


def main(path: str, name: str, stop: str, embedder: str = "none") -> None:
    with pcmem.open(path, embedder=None if embedder == "none" else embedder, lock_timeout=30) as runtime:
        scope = runtime.memory.for_scope("load")
        print("ready", flush=True)
        i = 0
        while not os.path.exists(stop):
            try:
                scope.remember(f"{name} wrote note {i}", entry_id=f"{name}-{i}", upsert=True)
                print("ack", f"{name}-{i}", flush=True)
                scope.list(pcmem.ListRequest(limit=5))
            except pcmem.PcmemError as error:
                print("err", type(error).__name__, str(error).replace(chr(10), " ")[:200], flush=True)
            i += 1


if __name__ == "__main__":
    main(*sys.argv[1:5])
