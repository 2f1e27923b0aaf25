"""Input limits and normalisation: every bad value is a typed InputError, and nothing reaches the store."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import plainly_valid

import pcmem
from pcmem import InputError, NewEntry, RememberRequest, ReviseRequest
from pcmem.validation import (
    MAX_METADATA_BYTES,
    MAX_TEXT_BYTES,
    normalize_text,
    validate_id,
    validate_metadata,
    validate_scope,
)


@pytest.mark.parametrize(
    "bad",
    ["", "   \n\t ", "x" * (MAX_TEXT_BYTES + 1), "é" * (MAX_TEXT_BYTES // 2 + 1), "bell\x07", "nul\x00byte",
     "lone \ud800 surrogate", "esc\x1b[31m", 42, None],
)
def test_bad_texts_are_input_errors(bad):
    with pytest.raises(InputError):
        normalize_text(bad)


def test_text_limit_counts_utf8_bytes_after_stripping():
    assert normalize_text("  " + "x" * MAX_TEXT_BYTES + "  ") == "x" * MAX_TEXT_BYTES
    assert normalize_text("line one\nline\ttwo\r\n") == "line one\nline\ttwo"
    assert normalize_text("rtl \u200f mark") == "rtl \u200f mark"


@pytest.mark.parametrize("bad", ["", "   ", "s" * 257, "tab\x01", 7])
def test_bad_scopes(bad):
    with pytest.raises(InputError):
        validate_scope(bad)


@pytest.mark.parametrize("bad", ["", "has space", "é", "x" * 129, "new\nline"])
def test_bad_ids(bad):
    with pytest.raises(InputError):
        validate_id(bad)


@pytest.mark.parametrize(
    "bad",
    [[1, 2], "text", {"n": float("nan")}, {"big": "x" * MAX_METADATA_BYTES}, {1: "int key"},
     {"deep": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}}, {"obj": object()}],
)
def test_bad_metadata(bad):
    with pytest.raises(InputError):
        validate_metadata(bad)


def test_request_models_raise_input_errors_not_pydantic_errors():
    with pytest.raises(InputError, match="expected_revision"):
        ReviseRequest(entry_id="a", text="b", expected_revision=-1)
    with pytest.raises(InputError, match="entries"):
        RememberRequest(entries=())
    with pytest.raises(InputError, match="colour: Extra inputs"):
        NewEntry(text="ok", colour="blue")


@pytest.fixture
def light_project(tmp_path, fake_embedder):
    """A scope on a store with a hash embedder: the text rules are what these examples test, not the model."""
    with pcmem.open(tmp_path / "light.duckdb", embedder=fake_embedder) as runtime:
        yield runtime.memory.for_scope("project")


@given(st.text(max_size=300))
def test_normalize_text_is_idempotent_or_refuses(raw):
    try:
        once = normalize_text(raw)
    except InputError:
        assert not plainly_valid(raw)
        return
    assert normalize_text(once) == once
    assert unicodedata.is_normalized("NFC", once)
    assert 1 <= len(once.encode("utf-8")) <= MAX_TEXT_BYTES


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.text(alphabet=st.characters(codec=None, categories=("Cc", "Cs", "Zs", "Lo", "Cf")), max_size=20))
def test_hostile_text_either_round_trips_or_leaves_store_unchanged(light_project, raw):
    project = light_project
    head_before = project.head()
    try:
        result = project.remember(raw)
    except InputError:
        assert project.head() == head_before
        assert not plainly_valid(raw)
        return
    assert project.get(result.citations[0]).entry.text == unicodedata.normalize("NFC", raw).strip()


def test_kind_takes_up_to_128_characters_as_the_schemas_say_and_a_refusal_does_not_echo_it():
    from pcmem.validation import validate_kind

    assert validate_kind("k" * 128) == "k" * 128
    with pytest.raises(InputError) as refused:
        validate_kind("k" * 5000)
    assert "5000 characters" in str(refused.value) and "kkkkk" not in str(refused.value)
