"""Issue 27 "one public API shape": ``pcmem.open``/``pcmem.open_async`` with explicit keywords, the handle types at
the root, and the sync and async APIs kept the same shape by comparing their signatures (not by a list to update)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest
from fakes import HashEmbedder

import pcmem
from pcmem.compose.async_runtime import Runtime
from pcmem.compose.runtime import SyncRuntime
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.memory.service import MemoryService, ScopedMemory, SyncMemoryService

#: The sync class of each pair, and its async counterpart.
PAIRS = [(SyncScopedMemory, ScopedMemory), (SyncMemoryService, MemoryService), (SyncRuntime, Runtime)]
#: What differs by design: the async side is a wrapper around its sync object (``sync``); the sync runtime is also a
#: context manager, the async one an async context manager; the rest is plumbing of the sync runtime the owner uses.
SYNC_ONLY = {"for_clients", "before_close"}


def _public(cls: type) -> dict[str, object]:
    return {name: inspect.getattr_static(cls, name) for name in dir(cls)
            if not name.startswith("_") and name not in SYNC_ONLY | {"sync"}}


def _signature(member: object) -> list[tuple[str, object, object]] | str:
    """Names, kinds and defaults of a method's parameters (``self``/``cls`` left out), or ``"property"``."""
    if isinstance(member, property):
        return "property"
    function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
    assert callable(function)
    parameters = list(inspect.signature(function).parameters.values())
    if not isinstance(member, staticmethod):
        parameters = parameters[1:]
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
        if name == "open":  # awaitable, and an async context manager too: open_async itself
            assert async_cls.open is pcmem.open_async
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


def test_the_old_names_and_the_shared_option_are_gone(tmp_path):
    """``open_sync``/``open_runtime`` were kept for one release, ``shared=`` changed nothing since every process takes
    part in the owner model: none is left."""
    assert not hasattr(pcmem, "open_sync") and not hasattr(pcmem, "open_runtime")
    assert "shared" not in inspect.signature(SyncRuntime.open).parameters
    for opener in (pcmem.open, pcmem.open_async):
        with pytest.raises(pcmem.InputError, match="unknown option 'shared'"):
            opener(tmp_path / "m.duckdb", shared=True)  # type: ignore[call-arg]
    assert list(tmp_path.iterdir()) == []


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


# --- one convention for every read and write: the identity positional, options as keywords, or a request --------

from pcmem.types.memory import (  # noqa: E402
    ChangesRequest,
    EntryRequest,
    ForgetRequest,
    HistoryRequest,
    ListRequest,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
)
from pcmem.types.search import SearchMemoryRequest  # noqa: E402

#: Each read and write, with the request object it takes and that request's identity field (the positional one).
CONVENTION: dict[str, tuple[type, str | None]] = {
    "remember": (RememberRequest, "entries"),
    "revise": (ReviseRequest, "entry_id"),
    "retire": (RetireRequest, "entry_id"),
    "reactivate": (ReactivateRequest, "entry_id"),
    "forget": (ForgetRequest, "entry_id"),
    "get_entry": (EntryRequest, "entry_id"),
    "history": (HistoryRequest, "entry_id"),
    "list": (ListRequest, None),
    "changes": (ChangesRequest, "since_revision"),
    "search": (SearchMemoryRequest, "query"),
}
#: Keywords that are not the request's: the scopes a service-wide search covers, how it reranks and reports, and
#: which write a call is (its idempotency key: the same write sent again is answered, not applied again).
NOT_REQUEST_FIELDS = {"scopes", "reranker", "rerank", "progress", "idempotency_key"}
#: ``remember(text, kind=..., metadata=..., entry_id=...)`` builds its one NewEntry from these keywords as well.
ENTRY_FIELDS = set(NewEntry.model_fields) - {"text"}
#: Positional before this convention, kept so existing calls (``get_entry("k", 3)``) keep working.
KEPT_POSITIONAL = {("get_entry", "revision")}
HANDLES = [SyncScopedMemory, ScopedMemory, SyncMemoryService, MemoryService]


@pytest.mark.parametrize("cls", HANDLES, ids=lambda cls: cls.__name__)
def test_every_read_and_write_takes_its_identity_or_its_request_and_the_rest_as_keywords(cls: type):
    for name, (request_type, identity) in CONVENTION.items():
        if not hasattr(cls, name):
            continue
        parameters = list(inspect.signature(getattr(cls, name)).parameters.values())[1:]
        assert all(p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in parameters), name  # typed, every one
        first, rest = parameters[0], parameters[1:]
        assert first.kind is first.POSITIONAL_OR_KEYWORD and request_type.__name__ in str(first.annotation), name
        positional = {(name, p.name) for p in rest if p.kind is not p.KEYWORD_ONLY}
        assert positional <= KEPT_POSITIONAL, name
        keywords = {p.name for p in rest} - NOT_REQUEST_FIELDS - (ENTRY_FIELDS if name == "remember" else set())
        assert keywords == set(request_type.model_fields) - {identity}, name  # both directions: every field, no other


def _read_and_write_both_ways(memory) -> list[object]:
    """The same calls, once as identity + keywords and once as request objects; what each returned (ids aside)."""
    from pcmem.types.memory import ChangesRequest as Changes

    seen: list[object] = []
    memory.remember("We deploy on Fridays.", entry_id="deploy", reason="kick-off")
    memory.remember(RememberRequest(entries=(NewEntry(text="Lunch is at noon.", entry_id="lunch"),),
                                    reason="kick-off"))
    written = memory.revise("deploy", text="We deploy on Thursdays.", expected_version=1, reason="moved")
    again = memory.revise(ReviseRequest(entry_id="lunch", text="Lunch is at one.", expected_version=1))
    seen.append((written.memory.revision, again.memory.revision))
    memory.retire("deploy", expected_version=2)
    memory.reactivate(ReactivateRequest(entry_id="deploy", expected_version=2))
    memory.retire(RetireRequest(entry_id="lunch", expected_revision=6))
    memory.reactivate("lunch", expected_revision=7)
    seen.append([e.entry.entry_id for e in memory.list(state="all", limit=1).entries])
    seen.append([e.entry.entry_id for e in memory.list(ListRequest(state="all", limit=1)).entries])
    seen.append(memory.get_entry("deploy", revision=2).entry.text)
    seen.append(memory.get_entry(EntryRequest(entry_id="deploy", revision=2)).entry.text)
    seen.append([c.operation for c in memory.changes(2, limit=3).changes])
    seen.append([c.operation for c in memory.changes(Changes(since_revision=2, limit=3)).changes])
    seen.append(len(memory.history("deploy").events) == len(memory.history(HistoryRequest(entry_id="deploy")).events))
    seen.append([h.citation.entry_id for h in memory.search("Thursdays", mode="fts", limit=1).hits])
    seen.append([h.citation.entry_id for h in memory.search(SearchMemoryRequest(query="Thursdays", mode="fts",
                                                                                 limit=1)).hits])
    seen.append(memory.forget("lunch").memory.revision)
    seen.append(memory.forget(ForgetRequest(entry_id="deploy")).memory.revision)
    return seen


def test_identity_and_keywords_mean_what_the_request_object_means(tmp_path):
    with pcmem.open(tmp_path / "m.duckdb", embedder=HashEmbedder()) as runtime:
        seen = _read_and_write_both_ways(runtime.memory.for_scope("s"))
    assert seen == [(3, 4), ["deploy"], ["deploy"], "We deploy on Fridays.", "We deploy on Fridays.",
                    ["revise", "revise", "retire"], ["revise", "revise", "retire"], True, ["deploy"], ["deploy"],
                    9, 10]


def test_the_async_handles_take_the_same_calls(tmp_path):
    import asyncio

    async def both_ways() -> list[object]:
        async with pcmem.open_async(tmp_path / "m.duckdb", embedder=HashEmbedder()) as runtime:
            scoped = runtime.memory.for_scope("s")
            calls: list[object] = []
            await scoped.remember("We deploy on Fridays.", entry_id="deploy", reason="kick-off")
            await scoped.revise("deploy", text="We deploy on Thursdays.", expected_version=1)
            await scoped.retire("deploy", expected_version=2)
            await scoped.reactivate(ReactivateRequest(entry_id="deploy", expected_version=2))
            calls.append([e.entry.text for e in (await scoped.list(state="all")).entries])
            calls.append((await scoped.get_entry(EntryRequest(entry_id="deploy", revision=2))).entry.text)
            calls.append([c.operation for c in (await scoped.changes(ChangesRequest(since_revision=1))).changes])
            calls.append(len((await scoped.history(HistoryRequest(entry_id="deploy"))).events))
            calls.append([h.citation.entry_id for h in (await scoped.search("Thursdays", mode="fts")).hits])
            calls.append([h.citation.entry_id for h in (await runtime.memory.search(
                "Thursdays", scopes=["s"], mode="fts", limit=1)).hits])
            calls.append((await scoped.forget(ForgetRequest(entry_id="deploy"))).memory.revision)
            return calls

    assert asyncio.run(both_ways()) == [["We deploy on Thursdays."], "We deploy on Thursdays.",
                                         ["revise", "retire", "reactivate"], 4, ["deploy"], ["deploy"], 5]


@pytest.mark.parametrize("call", [
    lambda m: m.revise(ReviseRequest(entry_id="k", text="x", expected_version=1), expected_version=2),
    lambda m: m.retire(RetireRequest(entry_id="k", expected_version=1), reason="why"),
    lambda m: m.list(ListRequest(state="all"), limit=5),
    lambda m: m.changes(ChangesRequest(since_revision=0), limit=5),
    lambda m: m.get_entry(EntryRequest(entry_id="k"), 3),
    lambda m: m.search(SearchMemoryRequest(query="q"), mode="fts"),
    lambda m: m.remember(RememberRequest(entries=(NewEntry(text="x"),)), reason="why"),
], ids=["revise", "retire", "list", "changes", "get_entry", "search", "remember"])
def test_a_request_and_keywords_for_its_fields_is_a_one_line_input_error(tmp_path, call):
    with pcmem.open(tmp_path / "m.duckdb", embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        with pytest.raises(pcmem.InputError, match="go into the .*Request, not next to it") as refused:
            call(memory)
        assert "\n" not in str(refused.value)
        assert memory.head() is None  # nothing was written
