"""Issue 27 "one public API shape": ``pcmem.open``/``pcmem.open_async`` with explicit keywords, the handle types at
the root, and the sync and async APIs kept the same shape by comparing their signatures (not by a list to update)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest
from conftest import HashEmbedder

import pcmem
from pcmem.compose.async_runtime import Runtime
from pcmem.compose.runtime import SyncRuntime
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.memory.service import MemoryService, ScopedMemory, SyncMemoryService

#: The sync class of each pair, and its async counterpart.
PAIRS = [(SyncScopedMemory, ScopedMemory), (SyncMemoryService, MemoryService), (SyncRuntime, Runtime)]
#: What differs by design: the async side is a wrapper around its sync object (``sync``); the sync runtime is also a
#: context manager, the async one an async context manager; the rest is plumbing of the sync runtime the owner uses.
SYNC_ONLY = {"for_clients", "before_close", "owner_pid"}


def _public(cls: type) -> dict[str, object]:
    return {name: inspect.getattr_static(cls, name) for name in dir(cls)
            if not name.startswith("_") and name not in SYNC_ONLY | {"sync"}}


def _signature(member: object) -> list[tuple[str, object, object]] | str:
    """Names, kinds and defaults of a method's parameters (``self``/``cls`` left out), or ``"property"``."""
    if isinstance(member, property):
        return "property"
    function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
    assert callable(function)
    parameters = list(inspect.signature(function).parameters.values())[1:]
    return [(p.name, p.kind, p.default) for p in parameters]


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=lambda cls: cls.__name__)
def test_every_sync_method_has_an_async_counterpart_of_the_same_shape(sync_cls: type, async_cls: type):
    sync_api, async_api = _public(sync_cls), _public(async_cls)
    assert sorted(sync_api.keys() - async_api.keys()) == []
    assert sorted(async_api.keys() - sync_api.keys()) == []
    for name in sorted(sync_api.keys() & async_api.keys()):
        assert _signature(async_api[name]) == _signature(sync_api[name]), name


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=lambda cls: cls.__name__)
def test_the_async_counterparts_are_awaited(sync_cls: type, async_cls: type):
    """Every async method that does work (not a cheap handle or a property) is a coroutine function."""
    for name, member in _public(async_cls).items():
        if name in {"for_scope"} or isinstance(member, property):
            continue
        function = member.__func__ if isinstance(member, classmethod) else member
        assert inspect.iscoroutinefunction(inspect.unwrap(function)), name


def _keywords(function: Callable[..., object]) -> list[tuple[str, object, object, object]]:
    return [(p.name, p.kind, p.default, p.annotation) for p in inspect.signature(function).parameters.values()]


def test_open_and_open_async_take_the_options_of_syncruntime_open_by_name():
    """No ``**options: Any``: a type checker sees every option, and ``help(pcmem.open)`` lists them."""
    expected = _keywords(SyncRuntime.open)
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in inspect.signature(SyncRuntime.open).parameters
               .values())
    for function in (pcmem.open, pcmem.open_async, Runtime.open):
        assert _keywords(function) == expected, function


def test_the_old_names_are_the_new_functions():
    assert pcmem.open_sync is pcmem.open and pcmem.open_runtime is pcmem.open_async


def test_the_handle_types_are_exported_from_the_root():
    for name in ("ScopedMemory", "SyncScopedMemory", "MemoryService", "SyncMemoryService", "DecisionModel",
                 "Runtime", "SyncRuntime", "open", "open_async"):
        assert name in pcmem.__all__, name
    assert pcmem.ScopedMemory is ScopedMemory and pcmem.SyncScopedMemory is SyncScopedMemory


def test_open_and_open_async_open_the_same_store(tmp_path):
    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=HashEmbedder()) as runtime:
        assert isinstance(runtime, pcmem.SyncRuntime)
        runtime.memory.for_scope("s").remember("We deploy on Fridays.")

    async def read_back() -> list[str]:
        async with pcmem.open_async(path, embedder=HashEmbedder()) as runtime:
            assert isinstance(runtime, pcmem.Runtime)
            page = await runtime.memory.for_scope("s").list()
            return [entry.entry.text for entry in page.entries]

    import asyncio
    assert asyncio.run(read_back()) == ["We deploy on Fridays."]


def test_an_unknown_option_of_open_is_an_input_error(tmp_path):
    with pytest.raises(pcmem.InputError, match="'embeder'"):
        pcmem.open(tmp_path / "m.duckdb", embeder=None)  # type: ignore[call-arg]
    with pytest.raises(pcmem.InputError, match="'embeder'"):
        pcmem.open_async(tmp_path / "m.duckdb", embeder=None)  # type: ignore[call-arg]
    assert list(tmp_path.iterdir()) == []
