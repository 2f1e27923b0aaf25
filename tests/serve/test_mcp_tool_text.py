"""What the tools tell a model, checked against what they are and do (issue 43: "tool text a model can trust").

Every tool, argument and result field a description, the server instructions or an error hint names must exist; each
"Returns {...}" must be the result's real keys; each hint's claim ("X gives its current Y") must hold for X's real
result. The tool list is measured in tokens against a ceiling, and every property has a top-level ``type`` (what
MCP Inspector 0.15's CLI needs to send a value as anything but a string).

Tokens: the compact JSON of the tool list as ``tools/list`` sends it, counted two ways — characters / 4 (the usual
estimate for English with BPE tokenizers) and the all-MiniLM-L6-v2 WordPiece tokenizer that ships with pcmem (it
splits JSON punctuation finely, so it counts more). Before issue 43: 24,225 characters (~6,056 tokens at 4 a token;
10,539 MiniLM tokens) for 12 tools.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from click.testing import CliRunner  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

import pcmem  # noqa: E402
from pcmem.serve import errors  # noqa: E402
from pcmem.serve.errors import Failure  # noqa: E402
from pcmem.serve.mcp_tools import call, tool_list  # noqa: E402
from pcmem.serve.operations import MemoryApi  # noqa: E402
from pcmem.serve.tool_schema import input_schema  # noqa: E402
from pcmem.serve.tools import INSTRUCTIONS, TOOL_NAMES, TOOLS  # noqa: E402

#: A third of the tool list before issue 43 (24,225 characters; 10,539 MiniLM tokens).
MAX_CHARACTERS = 24_225 // 3
MAX_MINILM_TOKENS = 10_539 // 3
TOKENIZER = Path(pcmem.__file__).parent / "embedding" / "data" / "all-MiniLM-L6-v2-tokenizer.json"
#: Names a text may use that are neither tools, arguments nor result fields.
OTHER_NAMES = {"revision_conflict", "memory_entry_inactive"}

#: One valid call of every tool, in an order that works on a fresh store (the last ones erase).
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("remember_memory", {"scope_id": "s", "text": "Ana prefers the Helix editor.", "key": "editor"}),
    ("remember_memory", {"scope_id": "s", "text": "Deploys go out on Tuesdays.", "key": "deploy"}),
    ("prepare_context", {"scope_id": "s", "query": "editor", "explain": True}),
    ("search_memory", {"scope_id": "s", "query": "editor"}),
    ("list_memory_entries", {"scope_id": "s"}),
    ("get_memory_entry", {"scope_id": "s", "entry_id": "editor"}),
    ("revise_memory_entry", {"scope_id": "s", "entry_id": "editor", "text": "Ana prefers Neovim."}),
    ("retire_memory_entry", {"scope_id": "s", "entry_id": "editor"}),
    ("reactivate_memory_entry", {"scope_id": "s", "entry_id": "editor"}),
    ("list_recent_memory", {"scope_ids": ["s"]}),
    ("list_scopes", {}),
    ("entry_history", {"scope_id": "s", "entry_id": "editor"}),
    ("forget_memory_entry", {"scope_id": "s", "entry_id": "deploy"}),
    ("entry_history", {"scope_id": "s", "entry_id": "deploy"}),  # a forgotten entry: its erasure
    ("forget_memory_scope", {"scope_id": "s", "confirm_scope_id": "s"}),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """Every tool's real result on a real store (a tool's second call is under ``NAME#2``)."""
    path = tmp_path_factory.mktemp("text") / "text.duckdb"
    runtime = pcmem.open(path, embedder=None)
    api = MemoryApi(runtime, path)

    async def run_all() -> dict[str, dict[str, Any]]:
        found = {}
        for name, arguments in CALLS:
            result = await call(api, name, arguments)
            assert not result.is_error, (name, result.content[0].text)
            found[name if name not in found else f"{name}#2"] = json.loads(result.content[0].text)
        return found

    import asyncio

    try:
        return asyncio.run(run_all())
    finally:
        api.close()
        runtime.close()


def _keys(value: Any) -> set[str]:
    """Every key of a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value) | {key for item in value.values() for key in _keys(item)}
    if isinstance(value, list):
        return {key for item in value for key in _keys(item)}
    return set()


def _snake_names(text: str) -> set[str]:
    return set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text))


def _texts() -> dict[str, str]:
    """Everything the tools say to a model: descriptions, argument descriptions, instructions, every hint."""
    said = {"instructions": INSTRUCTIONS, "scope conflict hint": errors.SCOPE_CONFLICT_ADVICE}
    for tool in TOOLS:
        said[tool.name] = tool.description
        for argument, schema in input_schema(tool.arguments)["properties"].items():
            said[f"{tool.name}.{argument}"] = schema.get("description", "")
    said |= {f"hint {code}": text for code, text in errors.ADVICE.items()}
    return said


def test_every_name_a_tool_text_mentions_exists(results):
    known = (set(TOOL_NAMES) | {name for tool in TOOLS for name in input_schema(tool.arguments)["properties"]}
             | {key for result in results.values() for key in _keys(result)} | OTHER_NAMES | set(errors.ADVICE))
    for where, text in _texts().items():
        assert _snake_names(text) <= known, f"{where} names what does not exist: {_snake_names(text) - known}"
    assert "list_memory_changes" not in json.dumps([tool.model_dump(mode="json") for tool in tool_list()])


def test_every_returns_clause_is_the_real_result_shape(results):
    for tool in TOOLS:
        said = re.search(r"Returns \{([^}]*)\}", tool.description)
        if said is None:
            assert "Returns the entry." in tool.description, tool.name
            assert set(results[tool.name]) == set(results["list_memory_entries"]["entries"][0]), tool.name
            continue
        promised = {name.strip() for name in said.group(1).split(",")}
        options = " ".join(s.get("description", "") for s in input_schema(tool.arguments)["properties"].values())
        extra = set(results[tool.name]) - promised  # a key an argument asks for must be named by that argument
        assert promised <= set(results[tool.name]) and all(f"return {key}" in options for key in extra), tool.name
    erased = results["entry_history#2"]
    assert erased["state"] == "erased" and set(erased) == {"entry_id", "state", "events", "erased_in_revision"}


def test_the_instructions_name_the_fields_every_entry_has(results):
    entry = results["get_memory_entry"]
    said = re.search(r"Every entry in a result has ([a-z_, ]+) and ([a-z_]+)\.", INSTRUCTIONS)
    assert said is not None
    assert {*said.group(1).split(", "), said.group(2)} == set(entry)
    shapes = [results["list_memory_entries"]["entries"][0], results["remember_memory"]["entry"],
              results["list_recent_memory"]["entries"][0]]
    assert all(set(shape) == set(entry) for shape in shapes), "one entry shape in every result"
    assert set(results["search_memory"]["hits"][0]) == set(entry) | {"score", "matched_by"}


#: What each hint says a tool gives, checked against that tool's real result: (hint, tool, fields it must return).
HINT_CLAIMS = [
    (errors.ADVICE["revision_conflict"], "get_memory_entry", {"text", "version"}),
    (errors.SCOPE_CONFLICT_ADVICE, "list_memory_entries", {"revision"}),
    (errors.ADVICE["memory_not_found"], "list_scopes", {"scopes"}),
    (errors.ADVICE["memory_not_found"], "list_memory_entries", {"entries"}),
    (errors.ADVICE["memory_entry_inactive"], "list_memory_entries", {"entries"}),
]


@pytest.mark.parametrize(("hint", "tool", "fields"), HINT_CLAIMS)
def test_every_hint_matches_the_results_it_points_to(results, hint, tool, fields):
    assert tool in hint
    assert fields <= _keys(results[tool]) | set(results[tool]), (tool, fields)


def test_a_conflict_reads_as_json_with_the_keys_it_counts():
    version = pcmem.RevisionConflictError("x", expected=1, actual=2, about="version")
    revision = pcmem.RevisionConflictError("x", expected=5, actual=1)
    assert 'details: {"expected_version": 1, "current_version": 2}.' in errors.tool_error_text(
        errors.failure_for(version), "revise_memory_entry")
    assert 'details: {"expected_revision": 5, "head_revision": 1}.' in errors.tool_error_text(
        errors.failure_for(revision), "remember_memory")
    inactive = errors.failure_for(pcmem.EntryStateError("cannot retire entry 'k': it is retired", state="retired"))
    assert (inactive.status, inactive.code) == (409, "memory_entry_inactive")
    assert errors.tool_error_text(Failure(503, "store_unavailable", "m")).endswith("run `pcmem check`.")


def test_pcmem_mcp_help_lists_every_tool():
    from pcmem.cli import main

    shown = CliRunner().invoke(main, ["mcp", "--help"], terminal_width=200).output
    assert [name for name in TOOL_NAMES if name not in shown] == []


def test_every_property_has_a_top_level_type():
    for tool in tool_list():
        for name, schema in tool.input_schema["properties"].items():
            assert "type" in schema and "$ref" not in schema and "anyOf" not in schema, (tool.name, name)
            if schema["type"] == "array":
                assert "type" in schema["items"], (tool.name, name)


def test_the_tool_list_costs_a_third_of_its_tokens_before():
    listed = json.dumps([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tool_list()],
                        separators=(",", ":"), ensure_ascii=False)
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()
    minilm = len(tokenizer.encode(listed, add_special_tokens=False).ids)
    print(f"tool list: {len(TOOL_NAMES)} tools, {len(listed)} characters (~{len(listed) // 4} tokens at 4 a "
          f"token), {minilm} MiniLM tokens")
    assert len(listed) <= MAX_CHARACTERS and minilm <= MAX_MINILM_TOKENS
