"""End-to-end tests of the ``pcmem`` command line, run in-process through click's CliRunner.

Every test works on its own store file under ``tmp_path``; output is read back through ``--json`` wherever the
assertion is about data, and through stderr/exit status wherever it is about failures.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import click
import duckdb
import pytest
from click.testing import CliRunner, Result

from pcmem.cli import main
from pcmem.demo_data import DEMO_EDITS, DEMO_ENTRIES, DEMO_SCOPE
from pcmem.errors import InputError, NotFoundError, RevisionConflictError, StoreError
from pcmem.validation import MAX_SCOPE_CHARS, MAX_TEXT_BYTES

# --- helpers ------------------------------------------------------------------------------------------------------


def db_path(tmp_path: Path) -> Path:
    return tmp_path / "m.duckdb"


def invoke(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    """Run ``pcmem ARGS`` in-process; PCMEM_DB is cleared unless ``env`` sets it, so the real environment never leaks in."""
    merged: dict[str, str | None] = {"PCMEM_DB": None}
    merged.update(env or {})
    return CliRunner().invoke(main, args, env=merged)


def run(tmp_path: Path, *args: str) -> Result:
    """Run ``pcmem --db <tmp_path>/m.duckdb ARGS``."""
    return invoke(["--db", str(db_path(tmp_path)), *args])


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert "Traceback" not in result.output
    return result


def run_json(tmp_path: Path, *args: str) -> Any:
    """Run a command with ``--json``, require success and return the parsed document."""
    return json.loads(ok(run(tmp_path, *args, "--json")).stdout)


def assert_error(result: Result, exit_code: int) -> str:
    """The CLI's error contract: the exit status, one ``pcmem: error:`` line on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == exit_code, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    assert lines[0].startswith("pcmem: error: ")
    return lines[0]


def scopes(tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {summary["scope"]: summary for summary in run_json(tmp_path, "scopes")}


def head(tmp_path: Path, scope: str) -> int | None:
    summary = scopes(tmp_path).get(scope)
    return None if summary is None else summary["head_revision"]


def remember(tmp_path: Path, scope: str, text: str, *options: str) -> dict[str, Any]:
    return run_json(tmp_path, "remember", "--scope", scope, *options, text)


def entries_by_id(page: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["entry"]["entry_id"]: item for item in page["entries"]}


def citation_str(citation: dict[str, Any]) -> str:
    """The ``artifact@revision/entry/version`` form of a JSON citation (what ``str(Citation)`` prints)."""
    return f"{citation['artifact_id']}@{citation['revision']}/{citation['entry_id']}/{citation['entry_version_id']}"


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def jsonl(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False)


# --- 1. remember / list / show round trip ---------------------------------------------------------------------------


def test_remember_then_list_round_trips_normalised_text_kind_and_metadata(tmp_path: Path) -> None:
    decomposed = " \t Cafe\u0301 au lait,\n twice a day \n"
    assert not unicodedata.is_normalized("NFC", decomposed)
    metadata = {"turn": "D1:3", "n": 2, "ok": True, "tags": ["a", "b"], "nested": {"x": None, "y": 1.5}}

    written = remember(tmp_path, "project", decomposed, "--kind", "preference", "--metadata", json.dumps(metadata))
    assert written["memory"]["scope"] == "project"
    assert written["memory"]["revision"] == 1
    [citation] = written["citations"]
    assert citation["revision"] == 1
    assert citation["artifact_id"] == written["memory"]["artifact_id"]

    page = run_json(tmp_path, "list", "--scope", "project")
    assert page["memory"] == written["memory"]
    [item] = page["entries"]
    assert item["state"] == "active"
    assert item["citation"] == citation
    entry = item["entry"]
    assert entry["text"] == "Caf\u00e9 au lait,\n twice a day"  # NFC, stripped at both ends, inner text kept
    assert unicodedata.is_normalized("NFC", entry["text"])
    assert entry["kind"] == "preference"
    assert entry["metadata"] == metadata
    assert entry["version"] == 1
    assert entry["created_in_revision"] == 1
    assert entry["entry_id"] == citation["entry_id"]


def test_remember_defaults_kind_to_fact_and_metadata_to_empty(tmp_path: Path) -> None:
    written = remember(tmp_path, "project", "We deploy on Fridays.", "--id", "deploy-day")
    assert written["citations"][0]["entry_id"] == "deploy-day"
    entry = entries_by_id(run_json(tmp_path, "list", "--scope", "project"))["deploy-day"]["entry"]
    assert (entry["kind"], entry["metadata"], entry["text"]) == ("fact", {}, "We deploy on Fridays.")


def test_show_by_entry_id_and_by_citation(tmp_path: Path) -> None:
    written = remember(tmp_path, "project", "Alice likes tea.", "--id", "alice-tea", "--metadata", '{"src": "chat"}')
    [citation] = written["citations"]

    by_id = run_json(tmp_path, "show", "--scope", "project", "alice-tea")
    assert by_id["citation"] == citation
    assert by_id["entry"]["text"] == "Alice likes tea."
    assert by_id["entry"]["metadata"] == {"src": "chat"}

    by_citation = run_json(tmp_path, "show", "--scope", "project", citation_str(citation))
    assert by_citation == by_id

    # The human form prints the same citation string.
    text_out = ok(run(tmp_path, "show", "--scope", "project", "alice-tea")).stdout
    assert f"citation: {citation_str(citation)}" in text_out
    assert "Alice likes tea." in text_out


def test_show_by_old_citation_reads_the_exact_old_version(tmp_path: Path) -> None:
    first = remember(tmp_path, "project", "Alice likes tea.", "--id", "alice-tea")["citations"][0]
    run_json(tmp_path, "revise", "--scope", "project", "alice-tea", "Alice likes green tea.")

    old = run_json(tmp_path, "show", "--scope", "project", citation_str(first))
    assert old["entry"]["text"] == "Alice likes tea."
    assert old["entry"]["version"] == 1
    assert old["citation"]["revision"] == 1

    current = run_json(tmp_path, "show", "--scope", "project", "alice-tea")
    assert current["entry"]["text"] == "Alice likes green tea."
    assert current["entry"]["version"] == 2


def test_show_citation_of_another_scope_is_not_found(tmp_path: Path) -> None:
    other = remember(tmp_path, "other", "Something else.")["citations"][0]
    remember(tmp_path, "project", "Alice likes tea.")
    message = assert_error(run(tmp_path, "show", "--scope", "project", citation_str(other)), NotFoundError.exit_code)
    assert "another memory" in message


# --- 2. revise / retire / reactivate / history / changes / past revisions -------------------------------------------


def _edit_lifecycle(tmp_path: Path) -> list[dict[str, Any]]:
    """remember (r1) → revise (r2) → retire (r3) → reactivate (r4) of alice-tea, beside an untouched entry (r1)."""
    results = [
        run_json(tmp_path, "import", "--scope", "p", str(write_jsonl(tmp_path / "seed.jsonl", [
            jsonl({"entry_id": "alice-tea", "text": "Alice likes tea.", "kind": "preference", "metadata": {"v": 1}}),
            jsonl({"entry_id": "bob-coffee", "text": "Bob likes coffee."}),
        ]))),
        run_json(tmp_path, "revise", "--scope", "p", "--expected-revision", "1", "--metadata", '{"v": 2}',
                 "alice-tea", "Alice likes green tea."),
        run_json(tmp_path, "retire", "--scope", "p", "alice-tea"),
        run_json(tmp_path, "reactivate", "--scope", "p", "--expected-revision", "3", "alice-tea"),
    ]
    return results


def test_write_commands_each_create_one_revision(tmp_path: Path) -> None:
    results = _edit_lifecycle(tmp_path)
    assert [r["memory"]["revision"] for r in results] == [1, 2, 3, 4]
    assert len({r["memory"]["artifact_id"] for r in results}) == 1
    # retire/reactivate cite the version that stays current (v2, written by revise).
    revised_version = results[1]["citations"][0]["entry_version_id"]
    assert results[2]["citations"][0]["entry_version_id"] == revised_version
    assert results[3]["citations"][0]["entry_version_id"] == revised_version
    assert [r["citations"][0]["revision"] for r in results[1:]] == [2, 3, 4]
    assert head(tmp_path, "p") == 4


def test_history_lists_every_change_of_an_entry(tmp_path: Path) -> None:
    _edit_lifecycle(tmp_path)
    history = run_json(tmp_path, "history", "--scope", "p", "alice-tea")
    assert history["entry_id"] == "alice-tea"
    assert history["memory"]["revision"] == 4
    events = history["events"]
    assert [e["revision"] for e in events] == [1, 2, 3, 4]
    assert [e["operation"] for e in events] == ["remember", "revise", "retire", "reactivate"]
    assert [e["state"] for e in events] == ["active", "active", "retired", "active"]
    assert [e["entry"]["version"] for e in events] == [1, 2, 2, 2]
    assert [e["entry"]["text"] for e in events] == ["Alice likes tea."] + ["Alice likes green tea."] * 3
    assert events[1]["entry"]["metadata"] == {"v": 2}
    assert events[1]["entry"]["kind"] == "preference"  # kept by revise when --kind is absent

    untouched = run_json(tmp_path, "history", "--scope", "p", "bob-coffee")["events"]
    assert [(e["revision"], e["operation"]) for e in untouched] == [(1, "remember")]


def test_changes_since_lists_only_later_revisions(tmp_path: Path) -> None:
    _edit_lifecycle(tmp_path)
    everything = run_json(tmp_path, "changes", "--scope", "p")
    assert everything["since_revision"] == 0
    assert sorted((c["revision"], c["operation"], c["entry_id"]) for c in everything["changes"]) == [
        (1, "remember", "alice-tea"), (1, "remember", "bob-coffee"),
        (2, "revise", "alice-tea"), (3, "retire", "alice-tea"), (4, "reactivate", "alice-tea"),
    ]

    later = run_json(tmp_path, "changes", "--scope", "p", "--since", "2")
    assert later["since_revision"] == 2
    assert [(c["revision"], c["operation"], c["state"]) for c in later["changes"]] == [
        (3, "retire", "retired"), (4, "reactivate", "active"),
    ]
    assert run_json(tmp_path, "changes", "--scope", "p", "--since", "4")["changes"] == []


def test_list_past_revisions_shows_the_manifest_as_it_stood(tmp_path: Path) -> None:
    _edit_lifecycle(tmp_path)

    def state_and_text(revision: int, *flags: str) -> dict[str, tuple[str, str, int]]:
        page = run_json(tmp_path, "list", "--scope", "p", "--revision", str(revision), *flags)
        assert page["memory"]["revision"] == revision
        return {eid: (e["state"], e["entry"]["text"], e["entry"]["version"]) for eid, e in entries_by_id(page).items()}

    bob = ("active", "Bob likes coffee.", 1)
    assert state_and_text(1, "--all") == {"alice-tea": ("active", "Alice likes tea.", 1), "bob-coffee": bob}
    assert state_and_text(2, "--all") == {"alice-tea": ("active", "Alice likes green tea.", 2), "bob-coffee": bob}
    assert state_and_text(3, "--all") == {"alice-tea": ("retired", "Alice likes green tea.", 2), "bob-coffee": bob}
    assert state_and_text(3) == {"bob-coffee": bob}  # without --all retired entries are hidden
    assert state_and_text(4) == {"alice-tea": ("active", "Alice likes green tea.", 2), "bob-coffee": bob}
    # The head listing equals the last revision's.
    assert entries_by_id(run_json(tmp_path, "list", "--scope", "p", "--all")).keys() == {"alice-tea", "bob-coffee"}

    # show --revision reads one entry as it stood then.
    old = run_json(tmp_path, "show", "--scope", "p", "--revision", "1", "alice-tea")
    assert (old["entry"]["text"], old["citation"]["revision"]) == ("Alice likes tea.", 1)


def test_list_of_a_revision_past_the_head_is_not_found(tmp_path: Path) -> None:
    remember(tmp_path, "p", "One.")
    message = assert_error(run(tmp_path, "list", "--scope", "p", "--revision", "2"), NotFoundError.exit_code)
    assert "revision 2" in message


def test_revise_with_unchanged_content_writes_no_revision(tmp_path: Path) -> None:
    remember(tmp_path, "p", "Same text.", "--id", "same")
    result = run_json(tmp_path, "revise", "--scope", "p", "same", "  Same text.  ")
    assert result["memory"]["revision"] == 1
    assert head(tmp_path, "p") == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["retire", "--scope", "p", "gone"], "it is retired"),
        (["revise", "--scope", "p", "gone", "New text."], "is retired"),
        (["reactivate", "--scope", "p", "here"], "it is active"),
    ],
)
def test_state_conflicts_exit_3_and_write_nothing(tmp_path: Path, args: list[str], fragment: str) -> None:
    run_json(tmp_path, "import", "--scope", "p", str(write_jsonl(tmp_path / "s.jsonl", [
        jsonl({"entry_id": "gone", "text": "Gone."}), jsonl({"entry_id": "here", "text": "Here."}),
    ])))
    run_json(tmp_path, "retire", "--scope", "p", "gone")
    message = assert_error(run(tmp_path, *args), RevisionConflictError.exit_code)
    assert fragment in message
    assert head(tmp_path, "p") == 2


# --- 3. compare-and-swap conflicts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["remember", "--scope", "p", "--expected-revision", "1", "Another."],
        ["remember", "--scope", "p", "--expected-revision", "0", "Another."],
        ["revise", "--scope", "p", "--expected-revision", "1", "e1", "Changed."],
        ["retire", "--scope", "p", "--expected-revision", "1", "e1"],
        ["reactivate", "--scope", "p", "--expected-revision", "3", "e1"],
        ["import", "--scope", "p", "--expected-revision", "1", "{jsonl}"],
    ],
    ids=["remember-stale", "remember-zero", "revise", "retire", "reactivate", "import"],
)
def test_expected_revision_mismatch_exits_3_and_leaves_store_unchanged(tmp_path: Path, args: list[str]) -> None:
    remember(tmp_path, "p", "First.", "--id", "e1")
    remember(tmp_path, "p", "Second.", "--id", "e2")
    before_head = head(tmp_path, "p")
    before_page = run_json(tmp_path, "list", "--scope", "p", "--all")
    assert before_head == 2
    source = write_jsonl(tmp_path / "in.jsonl", [jsonl({"text": "Imported."})])
    args = [str(source) if arg == "{jsonl}" else arg for arg in args]

    message = assert_error(run(tmp_path, *args), RevisionConflictError.exit_code)
    assert "expected revision" in message
    assert "head" in message

    assert head(tmp_path, "p") == before_head
    assert run_json(tmp_path, "list", "--scope", "p", "--all") == before_page


def test_matching_expected_revision_succeeds(tmp_path: Path) -> None:
    assert remember(tmp_path, "p", "First.", "--expected-revision", "0")["memory"]["revision"] == 1
    assert remember(tmp_path, "p", "Second.", "--expected-revision", "1")["memory"]["revision"] == 2


# --- 4. import ------------------------------------------------------------------------------------------------------


def test_import_writes_every_line_in_one_revision_and_skips_blank_lines(tmp_path: Path) -> None:
    remember(tmp_path, "notes", "Already here.", "--id", "old")
    source = tmp_path / "notes.jsonl"
    source.write_text(
        "\n".join([
            jsonl({"text": "  First note.  "}),
            "",
            "   ",
            jsonl({"text": "Second note.", "kind": "event", "metadata": {"turn": "D1:3"}}),
            jsonl({"text": "Cafe\u0301 note.", "entry_id": "cafe"}),
            "",
        ]),
        encoding="utf-8",
    )

    result = run_json(tmp_path, "import", "--scope", "notes", str(source))
    assert result["memory"]["revision"] == 2
    assert len(result["citations"]) == 3
    assert {c["revision"] for c in result["citations"]} == {2}
    assert result["citations"][2]["entry_id"] == "cafe"
    assert head(tmp_path, "notes") == 2

    changes = run_json(tmp_path, "changes", "--scope", "notes", "--since", "1")["changes"]
    assert len(changes) == 3
    assert {(c["revision"], c["operation"]) for c in changes} == {(2, "remember")}

    page = run_json(tmp_path, "list", "--scope", "notes")
    texts = {item["entry"]["text"]: item["entry"] for item in page["entries"]}
    assert set(texts) == {"Already here.", "First note.", "Second note.", "Caf\u00e9 note."}
    assert texts["Second note."]["kind"] == "event"
    assert texts["Second note."]["metadata"] == {"turn": "D1:3"}
    assert texts["First note."]["kind"] == "fact"
    assert texts["Caf\u00e9 note."]["entry_id"] == "cafe"


def test_import_without_json_prints_a_summary(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "n.jsonl", [jsonl({"text": "One."}), jsonl({"text": "Two."})])
    result = ok(run(tmp_path, "import", "--scope", "notes", str(source)))
    assert "imported 2 entries in 'notes' → revision 1" in result.stdout
    assert head(tmp_path, "notes") == 1


GOOD = jsonl({"text": "A fine line."})


@pytest.mark.parametrize(
    ("lines", "line_number", "fragment"),
    [
        ([GOOD, GOOD, '{"text": "unterminated'], 3, "not valid JSON"),
        ([GOOD, GOOD, jsonl({"text": ""})], 3, "empty"),
        ([GOOD, GOOD, jsonl({"text": "   "})], 3, "empty"),
        ([GOOD, GOOD, jsonl({"text": "x", "colour": "red"})], 3, "unknown fields ['colour']"),
        ([GOOD, GOOD, jsonl({"text": "x", "metadata": [1, 2]})], 3, "metadata must be a JSON object"),
        ([GOOD, GOOD, jsonl({"text": "x", "metadata": "a string"})], 3, "metadata must be a JSON object"),
        ([GOOD, GOOD, jsonl(["text", "x"])], 3, "JSON object"),
        ([GOOD, GOOD, jsonl({"kind": "fact"})], 3, "missing"),
        ([GOOD, GOOD, jsonl({"text": 42})], 3, "text must be a string"),
        ([GOOD, GOOD, jsonl({"text": "bell \x07"})], 3, "control character"),
        ([GOOD, GOOD, jsonl({"text": "x", "entry_id": "has space"})], 3, "entry_id"),
        # Blank lines are skipped but still counted, so the error names the physical line.
        ([GOOD, "", "  ", "not json"], 4, "not valid JSON"),
        (["[]", GOOD], 1, "JSON object"),
    ],
    ids=[
        "bad-json", "empty-text", "blank-text", "unknown-field", "metadata-list", "metadata-string", "not-object",
        "missing-text", "text-not-string", "control-char", "bad-id", "blank-lines-counted", "first-line",
    ],
)
def test_import_with_a_bad_line_writes_nothing_and_names_the_line(
    tmp_path: Path, lines: list[str], line_number: int, fragment: str
) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", lines)
    for extra in ([], ["--json"]):  # the progress display must not add to stderr either way
        message = assert_error(run(tmp_path, "import", "--scope", "fresh", str(source), *extra), InputError.exit_code)
        assert f"bad.jsonl:{line_number}:" in message
        assert fragment in message
    assert "fresh" not in scopes(tmp_path)
    assert assert_error(run(tmp_path, "list", "--scope", "fresh"), NotFoundError.exit_code)


def test_failed_import_into_an_existing_scope_leaves_it_unchanged(tmp_path: Path) -> None:
    remember(tmp_path, "notes", "Keep me.", "--id", "keep")
    before = run_json(tmp_path, "list", "--scope", "notes", "--all")
    source = write_jsonl(tmp_path / "bad.jsonl", [GOOD, GOOD, "{oops"])
    message = assert_error(run(tmp_path, "import", "--scope", "notes", str(source)), InputError.exit_code)
    assert ":3:" in message
    assert head(tmp_path, "notes") == 1
    assert run_json(tmp_path, "list", "--scope", "notes", "--all") == before


@pytest.mark.parametrize(
    ("lines", "fragment"),
    [
        ([jsonl({"text": "a", "entry_id": "dup"}), jsonl({"text": "b", "entry_id": "dup"})], "unique"),
        ([jsonl({"text": "a", "entry_id": "keep"})], "already exist"),
        (["", "   "], "has no entries"),
    ],
    ids=["duplicate-ids-in-file", "id-already-in-scope", "only-blank-lines"],
)
def test_import_rejects_whole_file_problems(tmp_path: Path, lines: list[str], fragment: str) -> None:
    remember(tmp_path, "notes", "Keep me.", "--id", "keep")
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    message = assert_error(run(tmp_path, "import", "--scope", "notes", str(source)), InputError.exit_code)
    assert fragment in message
    assert head(tmp_path, "notes") == 1


def test_import_of_non_utf8_file_is_an_input_error(tmp_path: Path) -> None:
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(jsonl({"text": "café"}).encode("latin-1"))
    message = assert_error(run(tmp_path, "import", "--scope", "notes", str(source)), InputError.exit_code)
    assert "not UTF-8" in message
    assert "notes" not in scopes(tmp_path)


# --- 5. bad input -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["remember", "--scope", "p", ""], "empty"),
        (["remember", "--scope", "p", " \t\n "], "empty"),
        (["remember", "--scope", "p", "x" * (MAX_TEXT_BYTES + 1)], f"limit is {MAX_TEXT_BYTES}"),
        # 2731 three-byte characters: 2731 code points but 8193 UTF-8 bytes.
        (["remember", "--scope", "p", "\u20ac" * 2731], "8193 UTF-8 bytes"),
        (["remember", "--scope", "p", "ring the bell \x07 now"], "control character U+0007"),
        (["remember", "--scope", "p", "--metadata", "{not json", "Text."], "metadata is not valid JSON"),
        (["remember", "--scope", "p", "--metadata", "[1, 2]", "Text."], "metadata must be a JSON object, got list"),
        (["remember", "--scope", "p", "--metadata", '"str"', "Text."], "metadata must be a JSON object"),
        (["remember", "--scope", "p", "--id", "has space", "Text."], "entry_id"),
        (["remember", "--scope", "p", "--id", "x" * 129, "Text."], "entry_id"),
        (["remember", "--scope", "p", "--kind", "  ", "Text."], "kind"),
        (["remember", "--scope", "s" * (MAX_SCOPE_CHARS + 1), "Text."], f"limit is {MAX_SCOPE_CHARS}"),
        (["remember", "--scope", "   ", "Text."], "scope must not be empty"),
        (["remember", "--scope", "p", "--expected-revision", "-1", "Text."], "non-negative"),
        (["revise", "--scope", "p", "--metadata", "[]", "e1", "Text."], "metadata must be a JSON object"),
        (["revise", "--scope", "p", "e1", ""], "empty"),
        (["list", "--scope", "s" * (MAX_SCOPE_CHARS + 1)], f"limit is {MAX_SCOPE_CHARS}"),
        (["show", "--scope", "p", "bad id"], "entry_id"),
        (["show", "--scope", "p", "not@a/citation"], "not a citation"),
    ],
    ids=[
        "empty-text", "whitespace-text", "text-8193-ascii", "text-8193-bytes-multibyte", "control-char",
        "metadata-invalid-json", "metadata-list", "metadata-string", "id-with-space", "id-too-long", "blank-kind",
        "scope-257", "blank-scope", "negative-expected", "revise-metadata-list", "revise-empty-text", "list-scope-257",
        "show-bad-id", "show-bad-citation",
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path: Path, args: list[str], fragment: str) -> None:
    remember(tmp_path, "p", "Existing.", "--id", "e1")
    message = assert_error(run(tmp_path, *args), InputError.exit_code)
    assert fragment in message
    summary = scopes(tmp_path)
    assert list(summary) == ["p"]
    assert summary["p"]["head_revision"] == 1
    assert summary["p"]["active_count"] == 1


def test_text_at_exactly_the_byte_limit_is_accepted(tmp_path: Path) -> None:
    text = "\u20ac" * (MAX_TEXT_BYTES // 3) + "x" * (MAX_TEXT_BYTES % 3)
    assert len(text.encode("utf-8")) == MAX_TEXT_BYTES
    remember(tmp_path, "p", text, "--id", "big")
    assert run_json(tmp_path, "show", "--scope", "p", "big")["entry"]["text"] == text


def test_scope_at_exactly_the_length_limit_is_accepted(tmp_path: Path) -> None:
    scope = "s" * MAX_SCOPE_CHARS
    remember(tmp_path, scope, "Text.")
    assert head(tmp_path, scope) == 1


def test_tab_and_newline_inside_text_are_allowed(tmp_path: Path) -> None:
    remember(tmp_path, "p", "a\tb\nc", "--id", "ws")
    assert run_json(tmp_path, "show", "--scope", "p", "ws")["entry"]["text"] == "a\tb\nc"


def test_click_usage_errors_are_not_confused_with_pcmem_errors(tmp_path: Path) -> None:
    result = run(tmp_path, "remember", "Text without a scope.")
    assert result.exit_code == 2
    assert "Missing option '--scope'" in result.stderr
    assert "pcmem: error:" not in result.stderr
    assert not db_path(tmp_path).exists()  # parsing failed before the store was opened


# --- 6. not found / corrupt and foreign store files -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--scope", "nope"],
        ["changes", "--scope", "nope"],
        ["history", "--scope", "nope", "x"],
        ["show", "--scope", "nope", "x"],
        ["revise", "--scope", "nope", "x", "Text."],
        ["retire", "--scope", "nope", "x"],
        ["reactivate", "--scope", "nope", "x"],
    ],
    ids=lambda args: args[0],
)
def test_unknown_scope_exits_4(tmp_path: Path, args: list[str]) -> None:
    remember(tmp_path, "p", "Exists.")
    message = assert_error(run(tmp_path, *args), NotFoundError.exit_code)
    assert "'nope'" in message
    assert "nope" not in scopes(tmp_path)


@pytest.mark.parametrize(
    "args",
    [
        ["show", "--scope", "p", "missing"],
        ["history", "--scope", "p", "missing"],
        ["revise", "--scope", "p", "missing", "Text."],
        ["retire", "--scope", "p", "missing"],
        ["changes", "--scope", "p", "--since", "5"],
    ],
    ids=["show", "history", "revise", "retire", "changes-past-head"],
)
def test_unknown_entry_or_revision_exits_4(tmp_path: Path, args: list[str]) -> None:
    remember(tmp_path, "p", "Exists.")
    assert_error(run(tmp_path, *args), NotFoundError.exit_code)
    assert head(tmp_path, "p") == 1


def test_plain_text_file_as_store_exits_5_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n", encoding="utf-8")
    before = path.read_bytes()
    for args in (["scopes"], ["list", "--scope", "p"], ["remember", "--scope", "p", "Text."]):
        message = assert_error(invoke(["--db", str(path), *args]), StoreError.exit_code)
        assert "not a DuckDB database file" in message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_foreign_duckdb_file_exits_5_and_is_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    connection = duckdb.connect(str(path))
    connection.execute("create table t(x int)")
    connection.execute("insert into t values (1), (2)")
    connection.close()
    before = path.read_bytes()

    for args in (["scopes"], ["remember", "--scope", "p", "Text."]):
        message = assert_error(invoke(["--db", str(path), *args]), StoreError.exit_code)
        assert "belongs to something else" in message

    assert path.read_bytes() == before
    connection = duckdb.connect(str(path), read_only=True)
    try:
        tables = {name for (name,) in connection.execute("select table_name from duckdb_tables()").fetchall()}
        rows = connection.execute("select x from t order by x").fetchall()
    finally:
        connection.close()
    assert tables == {"t"}
    assert rows == [(1,), (2,)]


def test_directory_as_store_exits_5(tmp_path: Path) -> None:
    message = assert_error(invoke(["--db", str(tmp_path), "scopes"]), StoreError.exit_code)
    assert "is a directory" in message


def test_store_in_a_missing_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "m.duckdb"
    ok(invoke(["--db", str(path), "remember", "--scope", "p", "Text."]))
    assert path.is_file()


# --- 7. demo --------------------------------------------------------------------------------------------------------


def _demo_expectations() -> tuple[int, int, int]:
    retired = {entry_id for op, entry_id, _ in DEMO_EDITS if op == "retire"}
    return len(DEMO_ENTRIES) - len(retired), len(retired), 1 + len(DEMO_EDITS)


def test_demo_expectations_match_the_documented_numbers() -> None:
    assert _demo_expectations() == (17, 1, 3)


def test_demo_seeds_the_demo_scope(tmp_path: Path) -> None:
    active, retired, head_revision = _demo_expectations()
    first = run_json(tmp_path, "demo")
    assert first["created"] is True
    assert first["db"] == str(db_path(tmp_path))
    assert first["page"]["memory"]["scope"] == DEMO_SCOPE
    assert first["page"]["memory"]["revision"] == head_revision

    summary = scopes(tmp_path)[DEMO_SCOPE]
    assert (summary["active_count"], summary["retired_count"], summary["head_revision"]) == (
        active, retired, head_revision,
    )

    page = entries_by_id(first["page"])
    assert set(page) == {entry_id for entry_id, *_ in DEMO_ENTRIES}
    for entry_id, kind, text, metadata in DEMO_ENTRIES:
        entry = page[entry_id]["entry"]
        assert entry["kind"] == kind
        assert entry["metadata"] == metadata
        if entry_id not in {eid for _, eid, _ in DEMO_EDITS}:
            assert entry["text"] == text
            assert entry["version"] == 1
    for op, entry_id, text in DEMO_EDITS:
        if op == "revise":
            assert page[entry_id]["entry"]["text"] == text
            assert page[entry_id]["entry"]["version"] == 2
            assert page[entry_id]["state"] == "active"
        else:
            assert page[entry_id]["state"] == "retired"

    # Revision 1 is the original import: everything active at version 1.
    original = entries_by_id(run_json(tmp_path, "list", "--scope", DEMO_SCOPE, "--revision", "1", "--all"))
    assert {(e["state"], e["entry"]["version"]) for e in original.values()} == {("active", 1)}
    assert {eid: e["entry"]["text"] for eid, e in original.items()} == {eid: text for eid, _, text, _ in DEMO_ENTRIES}


def test_demo_twice_leaves_the_scope_unchanged(tmp_path: Path) -> None:
    first = run_json(tmp_path, "demo")
    head_before = head(tmp_path, DEMO_SCOPE)
    second = run_json(tmp_path, "demo")
    assert second["created"] is False
    assert head(tmp_path, DEMO_SCOPE) == head_before
    assert second["page"] == first["page"]

    text_run = ok(run(tmp_path, "demo"))
    assert "already present" in text_run.stdout
    assert head(tmp_path, DEMO_SCOPE) == head_before


def test_demo_into_a_custom_scope(tmp_path: Path) -> None:
    active, retired, head_revision = _demo_expectations()
    result = run_json(tmp_path, "demo", "--scope", "sandbox")
    assert result["created"] is True
    summary = scopes(tmp_path)
    assert list(summary) == ["sandbox"]
    assert (summary["sandbox"]["active_count"], summary["sandbox"]["retired_count"]) == (active, retired)
    assert summary["sandbox"]["head_revision"] == head_revision


def test_demo_does_not_touch_an_existing_scope_of_that_name(tmp_path: Path) -> None:
    remember(tmp_path, DEMO_SCOPE, "My own entry.", "--id", "mine")
    result = run_json(tmp_path, "demo")
    assert result["created"] is False
    assert list(entries_by_id(result["page"])) == ["mine"]
    assert head(tmp_path, DEMO_SCOPE) == 1


# --- 8. PCMEM_DB ------------------------------------------------------------------------------------------------------


def test_pcmem_db_env_selects_the_store(tmp_path: Path) -> None:
    path = tmp_path / "from-env.duckdb"
    env = {"PCMEM_DB": str(path)}

    where = json.loads(ok(invoke(["where", "--json"], env=env)).stdout)
    assert where == {"db": str(path), "exists": False}

    ok(invoke(["remember", "--scope", "p", "--id", "env-entry", "Via the environment."], env=env))
    assert path.is_file()
    assert json.loads(ok(invoke(["where", "--json"], env=env)).stdout) == {"db": str(path), "exists": True}

    # The same file opened explicitly holds the entry; the --db default file of this test was never created.
    shown = json.loads(ok(invoke(["--db", str(path), "show", "--scope", "p", "env-entry", "--json"])).stdout)
    assert shown["entry"]["text"] == "Via the environment."
    assert not db_path(tmp_path).exists()


def test_db_option_wins_over_pcmem_db(tmp_path: Path) -> None:
    env_path, option_path = tmp_path / "env.duckdb", tmp_path / "option.duckdb"
    result = invoke(["--db", str(option_path), "where", "--json"], env={"PCMEM_DB": str(env_path)})
    assert json.loads(ok(result).stdout)["db"] == str(option_path)


def test_where_falls_back_to_the_per_user_default(tmp_path: Path) -> None:
    result = ok(invoke(["where", "--json"], env={"XDG_DATA_HOME": str(tmp_path / "xdg")}))
    where = json.loads(result.stdout)
    assert where["db"] == str(tmp_path / "xdg" / "pcmem" / "memory.duckdb")
    assert where["exists"] is False
    assert not (tmp_path / "xdg").exists()  # `where` never opens (or creates) the store

    plain = ok(invoke(["where"], env={"XDG_DATA_HOME": str(tmp_path / "xdg")}))
    assert plain.stdout.strip() == where["db"]


# --- 9. help and --json on every command -------------------------------------------------------------------------------


COMMANDS = sorted(main.commands)


def test_the_expected_commands_are_registered() -> None:
    assert set(COMMANDS) == {
        "remember", "import", "list", "show", "history", "changes", "revise", "retire", "reactivate", "scopes",
        "where", "demo",
    }


def test_main_help_and_version_do_not_touch_a_store(tmp_path: Path) -> None:
    help_result = ok(run(tmp_path, "--help"))
    assert "Quick start" in help_result.stdout
    for name in COMMANDS:
        assert name in help_result.stdout
    version = ok(run(tmp_path, "--version"))
    assert version.stdout.startswith("pcmem, version ")
    assert not db_path(tmp_path).exists()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(tmp_path: Path, name: str) -> None:
    for flag in ("--help", "-h"):
        result = ok(run(tmp_path, name, flag))
        assert result.stdout.startswith(f"Usage: main {name} [OPTIONS]")
        assert "--json" in result.stdout
        if name != "where":
            assert "Example" in result.stdout
            assert f"pcmem {name}" in result.stdout.split("Example", 1)[1]
    assert not db_path(tmp_path).exists()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_declares_a_json_flag(name: str) -> None:
    command = main.commands[name]
    flags = [p for p in command.params if isinstance(p, click.Option) and "--json" in p.opts]
    assert len(flags) == 1
    assert flags[0].is_flag
    assert flags[0].name == "as_json"


def _json_invocations(tmp_path: Path) -> dict[str, list[str]]:
    source = write_jsonl(tmp_path / "more.jsonl", [jsonl({"text": "Imported."})])
    return {
        "remember": ["remember", "--scope", DEMO_SCOPE, "A new note."],
        "import": ["import", "--scope", DEMO_SCOPE, str(source)],
        "list": ["list", "--scope", DEMO_SCOPE],
        "show": ["show", "--scope", DEMO_SCOPE, "release-day"],
        "history": ["history", "--scope", DEMO_SCOPE, "release-day"],
        "changes": ["changes", "--scope", DEMO_SCOPE, "--since", "1"],
        "revise": ["revise", "--scope", DEMO_SCOPE, "release-owner", "Priya owns the checklist."],
        "retire": ["retire", "--scope", DEMO_SCOPE, "budget"],
        "reactivate": ["reactivate", "--scope", DEMO_SCOPE, "sync-later"],
        "scopes": ["scopes"],
        "where": ["where"],
        "demo": ["demo"],
    }


def test_every_command_prints_one_json_document_with_json(tmp_path: Path) -> None:
    run_json(tmp_path, "demo")
    invocations = _json_invocations(tmp_path)
    assert set(invocations) == set(COMMANDS)
    for name in COMMANDS:
        result = ok(run(tmp_path, *invocations[name], "--json"))
        assert result.stderr == "", f"{name} wrote to stderr: {result.stderr!r}"
        document = json.loads(result.stdout)
        assert isinstance(document, (dict, list)), name


def test_every_command_prints_text_without_json(tmp_path: Path) -> None:
    run_json(tmp_path, "demo")
    invocations = _json_invocations(tmp_path)
    for name in COMMANDS:
        result = ok(run(tmp_path, *invocations[name]))
        assert result.stdout.strip(), f"{name} printed nothing"
        with pytest.raises(json.JSONDecodeError):
            json.loads(result.stdout)
