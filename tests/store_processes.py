"""Small programs the multi-process tests run with ``python -c`` (under the platform shims too, so they are strings):
processes that hold a store while a test does something beside them."""

#: Holds the store until stdin closes; says "ready" once it owns it (the scope "p" has one entry).
HOLDER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    runtime.memory.for_scope("p").remember("held")
    print("ready", flush=True)
    sys.stdin.read()
"""
