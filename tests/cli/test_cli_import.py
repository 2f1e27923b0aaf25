"""``pcmem import``: every line in one revision, and a bad line or file writes nothing.

End-to-end through click's CliRunner, each test on its own store file under ``tmp_path`` (helpers: tests/cli_runner.py;
seeded stores: tests/cli/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import (
    SCOPE,
    assert_error,
    jsonl,
    ok,
    run,
    run_json,
    scopes,
    store_bytes,
    write_jsonl,
)

from pcmem.errors import InputError

# --- 4. import ------------------------------------------------------------------------------------------------------


def test_import_writes_every_line_in_one_revision_and_skips_blank_lines(tmp_path: Path, two: None) -> None:
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

    result = run_json(tmp_path, "import", "--scope", SCOPE, str(source))
    assert result["memory"]["revision"] == 3
    assert len(result["citations"]) == 3
    assert {c["revision"] for c in result["citations"]} == {3}
    assert result["citations"][2]["entry_id"] == "cafe"

    changes = run_json(tmp_path, "changes", "--scope", SCOPE, "--since", "2")
    assert changes["memory"]["revision"] == 3  # the head: one revision for the whole file
    assert len(changes["changes"]) == 3
    assert {(c["revision"], c["operation"]) for c in changes["changes"]} == {(3, "remember")}

    page = run_json(tmp_path, "list", "--scope", SCOPE)
    texts = {item["entry"]["text"]: item["entry"] for item in page["entries"]}
    assert set(texts) == {"First.", "Second.", "First note.", "Second note.", "Caf\u00e9 note."}
    assert (texts["Second note."]["kind"], texts["Second note."]["metadata"]) == ("event", {"turn": "D1:3"})
    assert (texts["First note."]["kind"], texts["First note."]["metadata"]) == ("fact", {})
    assert texts["Caf\u00e9 note."]["entry_id"] == "cafe"


def test_import_into_a_new_scope_without_json_prints_a_summary(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "n.jsonl", [jsonl({"text": "One."}), jsonl({"text": "Two."})])
    result = ok(run(tmp_path, "import", "--scope", "notes", str(source)))
    assert "imported 2 entries in 'notes' → revision 1" in result.stdout
    summary = scopes(tmp_path)["notes"]
    assert (summary["head_revision"], summary["active_count"]) == (1, 2)


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
    tmp_path: Path, two: None, lines: list[str], line_number: int, fragment: str
) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", lines)
    before = store_bytes(tmp_path)
    for scope in ("fresh", SCOPE):
        message = assert_error(run(tmp_path, "import", "--scope", scope, str(source), "--json"), InputError.exit_code)
        assert f"bad.jsonl:{line_number}: " in message
        assert fragment in message
        # Without --json the progress display is on (on a terminal only); the error is still the only stderr line.
        assert assert_error(run(tmp_path, "import", "--scope", scope, str(source)), InputError.exit_code) == message
    assert store_bytes(tmp_path) == before


def test_failed_import_creates_no_scope_and_leaves_others_alone(tmp_path: Path, two: None) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", [GOOD, GOOD, jsonl({"text": ""}), GOOD])
    for scope in ("fresh", SCOPE):
        message = assert_error(run(tmp_path, "import", "--scope", scope, str(source), "--json"), InputError.exit_code)
        assert ":3:" in message
    summary = scopes(tmp_path)
    assert list(summary) == [SCOPE]  # "fresh" was never created
    assert (summary[SCOPE]["head_revision"], summary[SCOPE]["active_count"]) == (2, 2)


@pytest.mark.parametrize(
    ("lines", "fragment"),
    [
        ([jsonl({"text": "a", "entry_id": "dup"}), jsonl({"text": "b", "entry_id": "dup"})], "unique"),
        ([jsonl({"text": "a", "entry_id": "new"}), jsonl({"text": "b", "entry_id": "e1"})], "already exist"),
        (["", "   "], "has no entries"),
    ],
    ids=["duplicate-ids-in-file", "id-already-in-scope", "only-blank-lines"],
)
def test_import_rejects_whole_file_problems(tmp_path: Path, two: None, lines: list[str], fragment: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    before = store_bytes(tmp_path)
    message = assert_error(run(tmp_path, "import", "--scope", SCOPE, str(source), "--json"), InputError.exit_code)
    assert fragment in message
    assert store_bytes(tmp_path) == before


def test_import_of_non_utf8_file_is_an_input_error(tmp_path: Path, two: None) -> None:
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(jsonl({"text": "café"}).encode("latin-1"))
    before = store_bytes(tmp_path)
    message = assert_error(run(tmp_path, "import", "--scope", "notes", str(source), "--json"), InputError.exit_code)
    assert "not UTF-8" in message
    assert store_bytes(tmp_path) == before
