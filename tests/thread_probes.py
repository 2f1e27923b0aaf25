"""A probe for tests that two threads behind one write read something once: the first reader of a function holds on
until a second thread calls it too (or 1 s passed), so a second read, if the code makes one, happens while the
first is under way — deterministic, no timing assertion."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import pytest


def count_reads_held_open(monkeypatch: pytest.MonkeyPatch, targets: Iterable[tuple[ModuleType, str]]
                          ) -> dict[str, list[int]]:
    """Replace each ``module.name`` with a wrapper that counts its calls (one ``1`` per call, by name) and keeps the
    first call waiting for a second one."""
    calls: dict[str, list[int]] = {}
    for module, name in targets:
        calls[name] = []
        monkeypatch.setattr(module, name, _held_open(getattr(module, name), calls[name]))
    return calls


def _held_open(read: Callable[..., Any], made: list[int]) -> Callable[..., Any]:
    second = threading.Event()

    def reading(*args: Any) -> Any:
        made.append(1)
        if len(made) == 1:
            second.wait(1.0)  # the other thread's read would come now, if it made one
        else:
            second.set()
        return read(*args)

    return reading
