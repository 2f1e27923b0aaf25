"""The command line on bad input, things not found, and corrupt or foreign store files: one line, its own exit
status, nothing written.

End-to-end through click's CliRunner, each test on its own store file under ``tmp_path`` (helpers: tests/cli_runner.py;
seeded stores: tests/cli/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from cli_runner import (
    SCOPE,
    assert_error,
    invoke,
    ok,
    remember,
    run,
    run_json,
    store_bytes,
    store_path,
)

from pcmem.errors import InputError, NotFoundError, StoreError
from pcmem.validation import MAX_SCOPE_CHARS, MAX_TEXT_BYTES

# --- 5. bad input -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["remember", "--scope", SCOPE, ""], "empty"),
        (["remember", "--scope", SCOPE, " \t\n "], "empty"),
        (["remember", "--scope", SCOPE, "x" * (MAX_TEXT_BYTES + 1)], f"limit is {MAX_TEXT_BYTES}"),
        # 2731 three-byte characters: 2731 code points but 8193 UTF-8 bytes.
        (["remember", "--scope", SCOPE, "\u20ac" * 2731], "8193 UTF-8 bytes"),
        (["remember", "--scope", SCOPE, "ring the bell \x07 now"], "control character U+0007"),
        (["remember", "--scope", SCOPE, "--metadata", "{not json", "Text."], "metadata is not valid JSON"),
        (["remember", "--scope", SCOPE, "--metadata", "[1, 2]", "Text."], "metadata must be a JSON object, got list"),
        (["remember", "--scope", SCOPE, "--metadata", '"str"', "Text."], "metadata must be a JSON object"),
        (["remember", "--scope", SCOPE, "--id", "has space", "Text."], "entry_id"),
        (["remember", "--scope", SCOPE, "--id", "x" * 129, "Text."], "entry_id"),
        (["remember", "--scope", SCOPE, "--id", "e1", "Text."], "already exist"),
        (["remember", "--scope", SCOPE, "--kind", "  ", "Text."], "kind"),
        (["remember", "--scope", "s" * (MAX_SCOPE_CHARS + 1), "Text."], f"limit is {MAX_SCOPE_CHARS}"),
        (["remember", "--scope", "   ", "Text."], "scope must not be empty"),
        (["remember", "--scope", SCOPE, "--expected-revision", "-1", "Text."], "non-negative"),
        (["revise", "--scope", SCOPE, "--metadata", "[]", "e1", "Text."], "metadata must be a JSON object"),
        (["revise", "--scope", SCOPE, "e1", ""], "empty"),
        (["list", "--scope", "s" * (MAX_SCOPE_CHARS + 1)], f"limit is {MAX_SCOPE_CHARS}"),
        (["show", "--scope", SCOPE, "bad id"], "entry_id"),
    ],
    ids=[
        "empty-text", "whitespace-text", "text-8193-ascii", "text-8193-bytes-multibyte", "control-char",
        "metadata-invalid-json", "metadata-list", "metadata-string", "id-with-space", "id-too-long", "id-taken",
        "blank-kind", "scope-257", "blank-scope", "negative-expected", "revise-metadata-list", "revise-empty-text",
        "list-scope-257", "show-bad-id",
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path, two: None, args: list[str], fragment: str
) -> None:
    before = store_bytes(tmp_path)
    message = assert_error(run(tmp_path, *args), InputError.exit_code)
    assert fragment in message
    assert store_bytes(tmp_path) == before


def test_text_at_exactly_the_limits_is_accepted(tmp_path: Path) -> None:
    text = "\u20ac" * (MAX_TEXT_BYTES // 3) + "x" * (MAX_TEXT_BYTES % 3)
    assert len(text.encode("utf-8")) == MAX_TEXT_BYTES
    scope = "s" * MAX_SCOPE_CHARS
    remember(tmp_path, scope, text, "--id", "x" * 128)
    assert run_json(tmp_path, "show", "--scope", scope, "x" * 128)["entry"]["text"] == text


def test_click_usage_errors_are_one_line_that_points_at_help(tmp_path: Path) -> None:
    result = run(tmp_path, "remember", "Text without a scope.")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["pcmem: error: Missing option '--scope' / '-s'. See 'main remember --help'."]
    assert not store_path(tmp_path).exists()  # parsing failed before the store was opened


# --- 6. not found / corrupt and foreign store files -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["history", "--scope", "nope", "x"],
        ["show", "--scope", "nope", "x"],
        ["retire", "--scope", "nope", "x"],
    ],
    ids=lambda args: args[0],
)
def test_unknown_scope_exits_4(tmp_path: Path, two: None, args: list[str]) -> None:
    before = store_bytes(tmp_path)
    message = assert_error(run(tmp_path, *args), NotFoundError.exit_code)
    assert "'nope'" in message
    assert store_bytes(tmp_path) == before


@pytest.mark.parametrize(
    "args",
    [
        ["show", "--scope", SCOPE, "missing"],
        ["history", "--scope", SCOPE, "missing"],
        ["revise", "--scope", SCOPE, "missing", "Text."],
        ["changes", "--scope", SCOPE, "--since", "5"],
        ["show", "--scope", SCOPE, "not@a/citation"],  # not a citation, so looked up (and missed) as an entry id
        ["show", "--scope", SCOPE, "mem_x@1/e1/ver_x"],  # a well-formed citation naming nothing
    ],
    ids=["show", "history", "revise", "changes-past-head", "show-citation-like-id", "show-unknown-citation"],
)
def test_unknown_entry_or_revision_exits_4(tmp_path: Path, two: None, args: list[str]) -> None:
    before = store_bytes(tmp_path)
    assert_error(run(tmp_path, *args), NotFoundError.exit_code)
    assert store_bytes(tmp_path) == before


def test_plain_text_file_as_store_exits_5_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n", encoding="utf-8")
    before = path.read_bytes()
    for args in (["scopes"], ["list", "--scope", SCOPE], ["remember", "--scope", SCOPE, "Text."]):
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

    for args in (["scopes"], ["remember", "--scope", SCOPE, "Text."], ["demo"]):
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
    ok(invoke(["--db", str(path), "remember", "--scope", SCOPE, "Text."]))
    assert path.is_file()
