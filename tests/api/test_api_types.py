"""Issue 26 item 10: a wrongly typed argument to the Python API is an InputError with one line naming it.

Before: ``pcmem.open(lock_timeout="abc")`` raised TypeError, ``embedder=42`` AttributeError at the first write, a NUL
in the path ValueError, an unknown keyword TypeError; and pydantic's lax mode read ``upsert="yes"`` as true,
``limit=True`` as 1, ``created_from=5`` as 1970 and let ``Citation(revision=-1)`` through.
"""

from __future__ import annotations

import asyncio
import types
import typing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes import HashEmbedder

import pcmem
from pcmem import Citation, InputError, ListRequest, NewEntry, RememberRequest, SearchMemoryRequest
from pcmem.types.base import Request


def _one_line_naming(error: pytest.ExceptionInfo[InputError], name: str) -> None:
    message = str(error.value)
    assert "\n" not in message and name in message, message


# --- opening a store ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "named"), [
    ({"lock_timeout": "abc"}, "lock_timeout"),
    ({"lock_timeout": float("nan")}, "lock_timeout"),
    ({"lock_timeout": -1}, "lock_timeout"),
    ({"embedder": 42}, "embedder"),
    ({"rerank_embedder": 42}, "rerank_embedder"),
    ({"create": "no"}, "create"),
    ({"config": {"memory_rerank_enabled": True}}, "config"),
    ({"reranker": "listwise"}, "reranker"),
    ({"write_gate": 1}, "write_gate"),
    ({"clock": "now"}, "clock"),
    ({"bogus": 1}, "bogus"),
])
def test_a_wrong_option_is_refused_before_anything_is_opened(tmp_path, options, named):
    path = tmp_path / "new.duckdb"
    with pytest.raises(InputError) as refused:
        pcmem.open(path, **options)
    _one_line_naming(refused, named)
    assert list(tmp_path.iterdir()) == []  # no store was created


def test_open_async_refuses_the_same_options(tmp_path):
    with pytest.raises(InputError) as refused:
        pcmem.open_async(tmp_path / "a.duckdb", bogus=1)  # right away, before any await
    _one_line_naming(refused, "bogus")

    async def wrong_type() -> None:
        async with pcmem.open_async(tmp_path / "a.duckdb", lock_timeout="abc"):
            pass

    with pytest.raises(InputError) as refused:
        asyncio.run(wrong_type())
    _one_line_naming(refused, "lock_timeout")
    with pytest.raises(InputError):
        asyncio.run(pcmem.Runtime.open(tmp_path / "a.duckdb", bogus=1))


@pytest.mark.parametrize("path", ["m\0.duckdb", Path("m\0.duckdb"), 42, b"m.duckdb"])
def test_a_path_that_names_no_file_is_an_input_error(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        pcmem.open(path, embedder=None)
    _one_line_naming(refused, "path")


def test_reindex_with_a_wrong_embedder_is_an_input_error(tmp_path):
    with pcmem.open(tmp_path / "m.duckdb", embedder=None) as runtime:
        with pytest.raises(InputError) as refused:
            runtime.reindex(embedder=5)
        _one_line_naming(refused, "embedder")


def test_valid_options_still_open(tmp_path):
    with pcmem.open(tmp_path / "m.duckdb", embedder=HashEmbedder(), lock_timeout=0,
                         create=True, config=pcmem.RuntimeConfig(), clock=lambda: datetime(2024, 1, 1, tzinfo=UTC),
                         model_progress=None, write_gate=None, reranker=None) as runtime:
        runtime.memory.for_scope("s").remember("kept")
    with pcmem.open(str(tmp_path / "m.duckdb"), embedder=None, lock_timeout=2.5) as runtime:
        assert [e.entry.text for e in runtime.memory.for_scope("s").list().entries] == ["kept"]


# --- the memory API -----------------------------------------------------------------------------------------------


def test_switches_given_as_strings_are_refused(tmp_path):
    with pcmem.open(tmp_path / "m.duckdb", embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        for call in (lambda: scope.remember("x", entry_id="k", upsert="yes"),
                     lambda: scope.remember(RememberRequest(entries=(NewEntry(text="x"),)), upsert="yes"),
                     lambda: scope.remember(RememberRequest(entries=(NewEntry(text="x"),), upsert="yes"))):
            with pytest.raises(InputError) as refused:
                call()
            _one_line_naming(refused, "upsert")
        for call in (lambda: scope.search("x", reranker="no"),  # type: ignore[arg-type]
                     lambda: runtime.memory.search("x", scopes=["s"], reranker="no")):  # type: ignore[arg-type]
            with pytest.raises(InputError) as refused:
                call()
            _one_line_naming(refused, "reranker")
        assert scope.head() is None  # nothing was written


def test_the_issue_examples_are_refused():
    cases = [
        (lambda: ListRequest(limit=True), "limit"),
        (lambda: Citation(artifact_id="mem_x", revision=-1, entry_id="e", entry_version_id="ver_x"), "revision"),
        (lambda: SearchMemoryRequest(query="q", created_from=5), "created_from"),
        (lambda: SearchMemoryRequest(query="q", created_before="1700000000"), "created_before"),
    ]
    for build, named in cases:
        with pytest.raises(InputError) as refused:
            build()
        _one_line_naming(refused, named)


def test_dates_as_iso_text_and_datetimes_are_still_accepted():
    """JSON has no datetime type: the integrations and JSON callers pass ISO 8601 text."""
    for value in ("2024-05-01", "2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00", datetime(2024, 5, 1, 12)):
        request = SearchMemoryRequest(query="q", created_from=value)
        assert request.created_from is not None and request.created_from.tzinfo is not None
    assert SearchMemoryRequest(query="q", created_from="2024-05-01T14:00:00+02:00").created_from == datetime(
        2024, 5, 1, 12, tzinfo=UTC)
    with pytest.raises(InputError):
        SearchMemoryRequest(query="q", created_from="last tuesday")


# --- every field of every public request model -------------------------------------------------------------------

#: A valid request of each public request model (a citation is what ``get`` takes); a new model must be added here.
VALID: dict[type, dict[str, object]] = {
    Citation: {"artifact_id": "mem_x", "revision": 1, "entry_id": "e", "entry_version_id": "ver_x"},
    pcmem.NewEntry: {"text": "t"},
    pcmem.RememberRequest: {"entries": (NewEntry(text="t"),)},
    pcmem.ReviseRequest: {"entry_id": "e", "expected_revision": 1, "text": "t"},
    pcmem.RetireRequest: {"entry_id": "e", "expected_revision": 1},
    pcmem.ReactivateRequest: {"entry_id": "e", "expected_revision": 1},
    pcmem.ListRequest: {},
    pcmem.EntryRequest: {"entry_id": "e"},
    pcmem.HistoryRequest: {"entry_id": "e"},
    pcmem.ForgetRequest: {"entry_id": "e"},
    pcmem.ChangesRequest: {},
    pcmem.SearchMemoryRequest: {"query": "q"},
    pcmem.ContextRequest: {"query": "q"},
    pcmem.RecentRequest: {},
}

#: Values of another type than the field's, by the field's type: what pydantic's lax mode coerced.
WRONG: dict[str, tuple[object, ...]] = {
    "int": (True, False, "1", 1.0, b"1"),
    "bool": ("yes", "false", 1, 0, None),
    "datetime": (5, 5.0, "5", True, b"2024-01-01"),
    "str": (5, True, b"text"),
    "literal": (True, 5),
    "tuple": (5, True),
    "dict": (5, "text", True),
}


def _kind(annotation: object) -> str:
    """The field's type as a key of WRONG (Optional and Annotated unwrapped)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _kind(inner)
    if origin is typing.Annotated:
        return _kind(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return "literal"
    if origin in (tuple, dict):
        return origin.__name__
    return {int: "int", bool: "bool", datetime: "datetime", str: "str"}[annotation]  # KeyError: a new kind


def _public_request_models() -> set[type]:
    public = {getattr(pcmem, name) for name in pcmem.__all__}
    return {model for model in public if isinstance(model, type) and issubclass(model, Request)} | {Citation}


def _cases() -> list[tuple[type, str, object]]:
    cases = []
    for model in sorted(VALID, key=lambda m: m.__name__):
        for name, field in model.model_fields.items():
            wrong = WRONG[_kind(field.annotation)]
            if "revision" in name or "version" in name:
                wrong = (*wrong, -1)
            cases += [(model, name, value) for value in wrong]
    return cases


def test_the_table_covers_every_public_request_model():
    assert set(VALID) == _public_request_models()
    for model, valid in VALID.items():
        model(**valid)


@pytest.mark.parametrize(("model", "field", "value"), _cases(),
                         ids=lambda v: v.__name__ if isinstance(v, type) else repr(v))
def test_a_wrongly_typed_field_of_any_request_is_an_input_error_naming_it(model, field, value):
    with pytest.raises(InputError) as refused:
        model(**{**VALID[model], field: value})
    _one_line_naming(refused, field)
