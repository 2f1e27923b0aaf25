"""A process that exits without closing its stores exits cleanly: status 0, nothing on stderr, writes kept.

An app may end with ``sys.exit()`` and never call ``close()``, while other processes write through it (it owns the
store) or its own daemon threads still write. Left to the interpreter, a thread inside DuckDB at finalization
aborted the process (see :mod:`pcmem.native_calls`). So, once per process that opened a store file:

1. when the interpreter starts shutting down (after the main thread ended, before the non-daemon threads are
   joined), daemon threads are held back from new native calls (and from "the store is closed" errors);
2. at exit (``atexit``, after those threads were joined, before finalization): every owner listener stops — the
   calls other processes sent are answered, then their connections end and they take the store over — the calls in
   flight finish (for up to :data:`DRAIN_WAIT` seconds), and every store still open is closed as ``close()`` would
   (a checkpoint: the next open replays nothing).

An app's own exit handler that closes its runtime still runs (before this one, if registered after the store was
opened) and works as always.
"""

from __future__ import annotations

import atexit
import threading

from pcmem import native_calls

#: Seconds the exit waits for calls in flight inside DuckDB or a model (a write takes milliseconds).
DRAIN_WAIT = 10.0

_registered = False
_guard = threading.Lock()


def close_stores_at_exit() -> None:
    """Arrange the clean exit described in the module docstring (once per process; later calls do nothing)."""
    global _registered
    with _guard:
        if _registered:
            return
        _registered = True
    register_early = getattr(threading, "_register_atexit", None)  # what concurrent.futures uses for the same moment
    if register_early is not None:
        try:
            register_early(native_calls.start_draining)
        except RuntimeError:  # the interpreter is shutting down already
            pass
    atexit.register(_at_exit)


def _at_exit() -> None:
    from pcmem.compose import owned
    from pcmem.store import held

    owned.stop_serving()
    if native_calls.drain(DRAIN_WAIT):
        held.close_all()
