"""The async API as a mirror of the sync one: each async method runs its sync counterpart in a worker thread.

A method is declared once, on the sync class (its signature, its checks, its docstring); the async class names it:
``remember = in_worker(SyncScopedMemory.remember)``. Type checkers see the sync parameters and an awaitable of the
sync result (``ParamSpec``), ``help()`` and ``inspect`` the sync signature, and a call waits for the sync method in a
thread, so an event loop (a desktop app, the TUI) never blocks on the store.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


async def to_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread``, with asyncio imported on first use: a CLI call uses the blocking API only, and
    need not pay for importing asyncio."""
    import asyncio

    return await asyncio.to_thread(function, *args, **kwargs)


def api_methods(cls: type) -> tuple[str, ...]:
    """The Memory API methods of a sync handle class, by name: its public methods but the one that makes another
    handle (``for_scope``, which is cheap and not awaited). The async handles mirror these, and they are what an
    owner's client sends across the socket (:mod:`pcmem.owner.operations`)."""
    return tuple(sorted(name for name in dir(cls) if not name.startswith("_") and name != "for_scope"
                        and inspect.isfunction(inspect.getattr_static(cls, name))))


def in_worker(method: Callable[Concatenate[Any, P], T], note: str = "") -> Callable[Concatenate[Any, P],
                                                                                     Coroutine[Any, Any, T]]:
    """An async method calling ``method`` on the object's ``sync`` attribute in a worker thread: the same parameters,
    result and errors. ``note``: what the docstring adds about the async call (cancellation, say)."""
    name = method.__name__

    async def awaited(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        return await to_thread(getattr(self.sync, name), *args, **kwargs)

    awaited.__name__ = name
    awaited.__qualname__ = f"awaited.{name}"
    awaited.__module__ = method.__module__
    awaited.__doc__ = (f"As :meth:`{method.__qualname__}` (runs in a worker thread): the same result, the same "
                       f"errors.{' ' + note if note else ''}")
    awaited.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]  # help() shows the parameters
    return awaited
