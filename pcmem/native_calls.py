"""Calls into native libraries (DuckDB, onnxruntime, tokenizers), and the interpreter's exit.

Why: CPython before 3.14 ends a thread that wants the GIL back after finalization began with ``pthread_exit``. A
thread inside DuckDB or onnxruntime releases the GIL through a C++ guard, so when it comes back its forced unwind
runs through C++ frames that cannot be unwound and the process aborts: "terminate called without an active
exception", exit status -6 (134 in a shell). It happened whenever a process that owned a store exited without
``close()`` while one of its threads — an owner's server thread answering another process, or an app's own daemon
thread — was inside DuckDB.

So every such call enters through :func:`native_call`. When the interpreter starts shutting down
(:mod:`pcmem.compose.exit`), :func:`start_draining` holds back new calls of daemon threads — a held-back thread
waits on a lock, which holds no C++ frame, so the interpreter ends it quietly; it neither enters DuckDB nor raises
"the store is closed" into an app's thread — and :func:`drain` then waits for the calls in flight. Never held back:
the main thread (its exit handlers may still close a store), threads the interpreter joins (not daemon), a thread
already inside a call, and threads that pcmem joins itself before it drains (:func:`exempt_this_thread`: the
owner's server threads, which answer the calls other processes sent before the exit).
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_state = threading.Condition()
_inside = 0
_draining = False
_local = threading.local()  # count: calls this thread is inside; exempt: see exempt_this_thread


@contextmanager
def native_call() -> Iterator[None]:
    """Around a call into a native library (see the module docstring). Raises nothing of its own."""
    global _inside
    nested = getattr(_local, "count", 0)
    with _state:
        if not nested:
            _hold_back_while_exiting()
        _inside += 1
    _local.count = nested + 1
    try:
        yield
    finally:
        _local.count = nested
        with _state:
            _inside -= 1
            if _draining:
                _state.notify_all()


def _hold_back_while_exiting() -> None:
    """Under ``_state``: wait for ever when the process is exiting and this thread is one to hold back."""
    thread = threading.current_thread()
    while (_draining and thread.daemon and thread is not threading.main_thread()
           and not getattr(_local, "exempt", False)):
        _state.wait()


def hold_back_while_exiting() -> None:
    """For code about to raise "the store is closed": a daemon thread of an exiting process waits instead (the
    store was closed by the exit, not by the app's logic, and a traceback at every quit would be noise)."""
    with _state:
        _hold_back_while_exiting()


def exempt_this_thread() -> None:
    """Never hold back the calling thread: pcmem joins it itself before draining (see the module docstring)."""
    _local.exempt = True


def start_draining() -> None:
    """Hold back new native calls of daemon threads from now on (the interpreter is shutting down)."""
    global _draining
    with _state:
        _draining = True


def drain(timeout: float) -> bool:
    """Hold back new native calls of daemon threads and wait up to ``timeout`` seconds for the calls in flight
    (those of the calling thread excepted). True when none is left."""
    start_draining()
    deadline = time.monotonic() + timeout
    own = getattr(_local, "count", 0)
    with _state:
        while _inside > own:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            _state.wait(remaining)
    return True


def draining() -> bool:
    """Whether the process is exiting (:func:`drain` ran)."""
    return _draining


def entry_points(cls: type[T]) -> type[T]:
    """Run each public method of ``cls`` (defined in it) as one native call: the whole of a pcmem call, so that
    by the time it counts as finished its frames — and every DuckDB cursor they held — are gone. A cursor released
    later, by a daemon thread unwinding while the interpreter finalizes, aborted the process the same way."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, _counted(member))
    return cls


def _counted(method: Callable[..., R]) -> Callable[..., R]:
    @functools.wraps(method)
    def counted(*args: Any, **kwargs: Any) -> R:
        with native_call():
            return method(*args, **kwargs)

    return counted
