"""What both platform shims do (``tests/emulate/<system>/sitecustomize.py``): tell pcmem which system it runs on, take
names away, and make modules fail to import — at interpreter start, before any of pcmem is imported.

Run a command under a shim with ``PYTHONPATH=tests/emulate/windows`` (or ``macos``): Python imports the
``sitecustomize`` it finds there at start-up, in every process started that way (a process pcmem starts itself with
another environment, as ``pcmem doctor``'s ``env -i`` probe, runs without it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def tell_pcmem(kind: str) -> None:
    """``pcmem.system.KIND`` is ``kind`` from the moment the module exists (pcmem names the system only there)."""
    after_import("pcmem.system", lambda module: setattr(module, "KIND", kind))


def after_import(name: str, change: Callable[[types.ModuleType], None]) -> None:
    """Run ``change`` on the module ``name`` as soon as it has loaded, before anything else can use it."""
    sys.meta_path.insert(0, _AfterImport(name, change))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, change: Callable[[types.ModuleType], None]) -> None:
        self.name, self.change = name, change

    def find_spec(self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        if name != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        run, change = spec.loader.exec_module, self.change

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            change(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def remove(module: types.ModuleType, names: Iterable[str]) -> list[str]:
    """Delete ``names`` from ``module`` (those it has); returns what was deleted."""
    gone = [name for name in names if hasattr(module, name)]
    for name in gone:
        delattr(module, name)
    return gone


def unimportable(names: Iterable[str], *, linux_branches: dict[str, tuple[str, ...]] | None = None) -> None:
    """``import NAME`` fails with ModuleNotFoundError for each of ``names``, as for a module the system lacks.

    ``linux_branches``: third-party modules that choose by ``sys.platform`` (which still says Linux) and import some
    of ``names`` on Linux only; while one of them loads, those names import as usual, and are forgotten again after
    (it keeps its own reference): on Windows it would have taken its other branch."""
    missing = _Missing(frozenset(names))
    for name in missing.blocked:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, missing)
    for module, needs in (linux_branches or {}).items():
        sys.meta_path.insert(0, _LinuxBranch(module, needs, missing))


class _Missing(importlib.abc.MetaPathFinder):
    def __init__(self, blocked: frozenset[str]) -> None:
        self.blocked = blocked
        self.allowed: set[str] = set()

    def find_spec(self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        if name in self.blocked and name not in self.allowed:
            raise ModuleNotFoundError(f"No module named {name!r} (removed by the platform shim)", name=name)
        return None


class _LinuxBranch(importlib.abc.MetaPathFinder):
    def __init__(self, module: str, needs: tuple[str, ...], missing: _Missing) -> None:
        self.module, self.needs, self.missing = module, needs, missing

    def find_spec(self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        if name != self.module:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        run, needs, missing = spec.loader.exec_module, self.needs, self.missing

        def exec_module(module: types.ModuleType) -> None:
            missing.allowed.update(needs)
            try:
                run(module)
            finally:
                missing.allowed.difference_update(needs)
                for each in needs:
                    sys.modules.pop(each, None)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
