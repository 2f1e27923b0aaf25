"""An app that holds a store (it owns it: other processes become its clients) until its stdin closes; prints
``ready`` once its model is warm. Usage: ``store_holder.py STORE [none]`` (``pcmem bench owner``; ``none``: no
embedder, no model to warm: the chaos campaign's proxy-drop trial)."""

from __future__ import annotations

import sys

import pcmem


def main(path: str, embedder: str = "auto") -> None:
    with pcmem.open(path, embedder=None if embedder == "none" else "auto") as runtime:
        if runtime.embedder is not None:
            runtime.memory.for_scope("bench").search("warm up the model")
        print("ready", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main(*sys.argv[1:3])
