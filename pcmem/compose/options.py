"""The options of ``pcmem.open`` / ``pcmem.open_async`` / ``Runtime.open``, checked in one place before anything opens.

Their one definition is the signature of :meth:`pcmem.SyncRuntime.open` (names, types, defaults, and its docstring
for what each does); the async openers take that signature (:mod:`pcmem.compose.async_runtime`), and
:data:`OPEN_OPTIONS` gives each name its check (a test holds the two to the same names).

A wrong name or type is an :class:`~pcmem.errors.InputError` naming the option, raised before a file is created or a
model loaded — not a ``TypeError`` from the call, nor an ``AttributeError`` from deep inside the first write
(``embedder=42``), nor a truthy string read as a switch (``create="yes"``).

Light to import (the checks load their types when they run): ``pcmem.open_async`` is looked up on an app's asyncio
loop, and its module must not make the loop import pydantic and the store's types; opening imports them in a worker.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from pcmem.errors import InputError
from pcmem.validation import validate_flag


def _lock_timeout(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value < 0:
        raise InputError(f"{name} must be a number of seconds ≥ 0, got {value!r}")


def _flag(value: object, name: str) -> None:
    validate_flag(value, name)


def _embedder(value: object, name: str) -> None:
    from pcmem.compose.embedders import check_embedder_choice

    check_embedder_choice(value, name)


def _callable(value: object, name: str) -> None:
    if not callable(value):
        raise InputError(f"{name} must be callable, got {type(value).__name__}")


def _optional(check: Callable[[object, str], None]) -> Callable[[object, str], None]:
    def optional(value: object, name: str) -> None:
        if value is not None:
            check(value, name)
    return optional


def _config(kind_name: str) -> Callable[[object, str], None]:
    """An instance of ``pcmem.config``'s class ``kind_name``."""
    def instance(value: object, name: str) -> None:
        import pcmem.config

        kind = getattr(pcmem.config, kind_name)
        if not isinstance(value, kind):
            raise InputError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    return instance


def _with_method(method: str, what: str) -> Callable[[object, str], None]:
    def with_method(value: object, name: str) -> None:
        if not callable(getattr(value, method, None)):
            raise InputError(f"{name} must be {what} (an object with .{method}()), got {type(value).__name__}")
    return with_method


#: Every option of opening a store, with its check. ``SyncRuntime.open`` takes exactly these keywords.
OPEN_OPTIONS: dict[str, Callable[[object, str], None]] = {
    "embedder": _embedder,
    "rerank_embedder": _embedder,
    "clock": _callable,
    "config": _optional(_config("RuntimeConfig")),
    "inference": _optional(_config("InferenceConfig")),
    "reranker": _optional(_with_method("rerank", "a MemoryReranker")),
    "model_progress": _optional(_callable),
    "write_gate": _optional(_with_method("evaluate", "a DecisionModel")),
    "lock_timeout": _lock_timeout,
    "create": _flag,
}


P = ParamSpec("P")
R = TypeVar("R")


def refuse_unknown(caller: str, options: Mapping[str, object]) -> None:
    """Make a misspelt option an InputError naming it rather than Python's TypeError: the explicit keywords let a
    type checker find it before the run; this keeps the one-line pcmem error for code that is not type-checked."""
    unknown = sorted(set(options) - OPEN_OPTIONS.keys() - {"path"})
    if unknown:
        raise InputError(f"{caller} got an unknown option {unknown[0]!r}; it takes {', '.join(OPEN_OPTIONS)}")


def checked(function: Callable[P, R]) -> Callable[P, R]:
    """``SyncRuntime.open`` with every option checked before it runs: an unknown one, a wrongly typed one, a target
    that cannot name a store (InputError naming it)."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def opening(*args: P.args, **kwargs: P.kwargs) -> R:
        refuse_unknown("open", kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        _check_target(bound.arguments["path"])
        for name, check in OPEN_OPTIONS.items():
            check(bound.arguments[name], name)
        return function(*args, **kwargs)
    return opening


def given(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The open options among ``namespace`` (the opening call's ``locals()``), by name."""
    return {name: namespace[name] for name in OPEN_OPTIONS}


def _check_target(target: object) -> None:
    if not isinstance(target, str | os.PathLike):
        raise InputError(f"path must be a file path or a store URL, not {type(target).__name__}")
    text = os.fspath(target)
    if not isinstance(text, str):
        raise InputError(f"path must be a text path, not {type(text).__name__}")
    if "\0" in text:
        raise InputError("path contains a NUL character, which no file name can hold")
