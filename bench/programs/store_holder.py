"""An app that holds a store (it owns it: other processes become its clients) until its stdin closes; prints
``ready`` once its model is warm. Usage: ``store_holder.py STORE`` (``pcmem bench owner``)."""

from __future__ import annotations

import sys

import pcmem


def main(path: str) -> None:
    with pcmem.open_sync(path) as runtime:
        runtime.memory.for_scope("bench").search("warm up the model")
        print("ready", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1])
