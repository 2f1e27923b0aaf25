"""End-to-end tests of the ``pcmem`` command line, run in-process through click's CliRunner.

Every test works on its own store file under ``tmp_path``; output is read back through ``--json`` wherever the
assertion is about data, and through stderr/exit status wherever it is about failures.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import duckdb
import pytest
from click.testing import CliRunner, Result

from pcmem.cli import main
from pcmem.cli.demo_data import DEMO_EDITS, DEMO_ENTRIES, DEMO_SCOPE
from pcmem.errors import InputError, NotFoundError, RevisionConflictError, StoreError
from pcmem.validation import MAX_SCOPE_CHARS, MAX_TEXT_BYTES

# --- helpers ------------------------------------------------------------------------------------------------------


def store_path(tmp_path: Path) -> Path:
    return tmp_path / "m.duckdb"


def invoke(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    """Run ``pcmem ARGS`` in-process; PCMEM_DB is cleared unless ``env`` sets it (the real one never leaks in)."""
    merged: dict[str, str | None] = {"PCMEM_DB": None}
    merged.update(env or {})
    return CliRunner().invoke(main, args, env=merged)


def run(tmp_path: Path, *args: str) -> Result:
    """Run ``pcmem --db <tmp_path>/m.duckdb ARGS``."""
    return invoke(["--db", str(store_path(tmp_path)), *args])


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert "Traceback" not in result.output
    return result


def run_json(tmp_path: Path, *args: str) -> Any:
    """Run a command with ``--json``, require success and return the parsed document."""
    return json.loads(ok(run(tmp_path, *args, "--json")).stdout)


def assert_error(result: Result, exit_code: int) -> str:
    """The CLI's error contract: this exit status, one ``pcmem: error:`` stderr line, empty stdout, no traceback."""
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


def store_bytes(tmp_path: Path) -> bytes:
    """The raw store file. A command that fails leaves it byte-for-byte unchanged (DuckDB rewrites nothing on a
    read or a rolled-back transaction), which is a cheaper and stricter check than listing the scope again."""
    return store_path(tmp_path).read_bytes()


# --- seeded stores ------------------------------------------------------------------------------------------------
# Creating a store costs ~0.1 s (migrations, the FTS extension loaded to build the index), so stores that many tests
# start from are built once per session through the CLI and copied into each test's tmp_path.

SCOPE = "p"


def _build_two(directory: Path) -> None:
    """Scope "p": e1 "First." (revision 1) and e2 "Second." (revision 2)."""
    remember(directory, SCOPE, "First.", "--id", "e1")
    remember(directory, SCOPE, "Second.", "--id", "e2", "--kind", "event")


def _build_lifecycle(directory: Path) -> None:
    """Scope "p": import (r1) → revise (r2) → retire (r3) → reactivate (r4) of alice-tea; bob-coffee only in r1."""
    source = write_jsonl(directory / "seed.jsonl", [
        jsonl({"entry_id": "alice-tea", "text": "Alice likes tea.", "kind": "preference", "metadata": {"v": 1}}),
        jsonl({"entry_id": "bob-coffee", "text": "Bob likes coffee."}),
    ])
    results = [
        run_json(directory, "import", "--scope", SCOPE, str(source)),
        run_json(directory, "revise", "--scope", SCOPE, "--expected-revision", "1", "--metadata", '{"v": 2}',
                 "alice-tea", "Alice likes green tea."),
        run_json(directory, "retire", "--scope", SCOPE, "alice-tea"),
        run_json(directory, "reactivate", "--scope", SCOPE, "--expected-revision", "3", "alice-tea"),
    ]
    (directory / "results.json").write_text(json.dumps(results), encoding="utf-8")


def _build_demo(directory: Path) -> None:
    (directory / "results.json").write_text(json.dumps(run_json(directory, "demo")), encoding="utf-8")


_TEMPLATES: dict[str, Callable[[Path], None]] = {
    "two": _build_two, "lifecycle": _build_lifecycle, "demo": _build_demo,
}


@pytest.fixture(scope="session")
def _template_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-templates")


@pytest.fixture
def seed(_template_root: Path, tmp_path: Path) -> Callable[[str], Path]:
    """``seed(name)`` puts a copy of the named template store at this test's store path; returns the template dir."""

    def copy(name: str) -> Path:
        directory = _template_root / name
        if not store_path(directory).exists():
            directory.mkdir(exist_ok=True)
            _TEMPLATES[name](directory)
        shutil.copyfile(store_path(directory), store_path(tmp_path))
        return directory

    return copy


@pytest.fixture
def two(seed: Callable[[str], Path]) -> None:
    seed("two")


@pytest.fixture
def lifecycle(seed: Callable[[str], Path]) -> list[dict[str, Any]]:
    """The lifecycle store; returns the --json results of its four writes."""
    return json.loads((seed("lifecycle") / "results.json").read_text(encoding="utf-8"))


@pytest.fixture
def demo(seed: Callable[[str], Path]) -> dict[str, Any]:
    """A store seeded by ``pcmem demo --json`` (run in the template directory); returns that run's output."""
    return json.loads((seed("demo") / "results.json").read_text(encoding="utf-8"))


# --- 1. remember / list / show round trip ---------------------------------------------------------------------------


def test_remember_list_show_round_trip(tmp_path: Path) -> None:
    decomposed = " \t Cafe\u0301\tau lait,\n twice a day \n"
    assert not unicodedata.is_normalized("NFC", decomposed)
    metadata = {"turn": "D1:3", "n": 2, "ok": True, "tags": ["a", "b"], "nested": {"x": None, "y": 1.5}}

    written = remember(tmp_path, "project", decomposed, "--kind", "preference", "--metadata", json.dumps(metadata))
    assert written["memory"]["scope"] == "project"
    assert written["memory"]["revision"] == 1
    [citation] = written["citations"]
    assert citation["revision"] == 1
    assert citation["artifact_id"] == written["memory"]["artifact_id"]
    plain = remember(tmp_path, "project", "We deploy on Fridays.", "--id", "deploy-day")
    assert plain["citations"][0]["entry_id"] == "deploy-day"
    assert plain["memory"]["revision"] == 2

    page = run_json(tmp_path, "list", "--scope", "project")
    assert page["memory"] == plain["memory"]
    items = entries_by_id(page)
    assert set(items) == {citation["entry_id"], "deploy-day"}
    item = items[citation["entry_id"]]
    assert item["state"] == "active"
    assert item["citation"] == {**citation, "revision": 2}  # listed at the head revision
    entry = item["entry"]
    assert entry["text"] == "Caf\u00e9\tau lait,\n twice a day"  # NFC, stripped at both ends, inner tab/newline kept
    assert unicodedata.is_normalized("NFC", entry["text"])
    assert (entry["kind"], entry["metadata"], entry["version"], entry["created_in_revision"]) == (
        "preference", metadata, 1, 1,
    )
    # Defaults: kind "fact", empty metadata.
    default = items["deploy-day"]["entry"]
    assert (default["kind"], default["metadata"], default["text"]) == ("fact", {}, "We deploy on Fridays.")

    # show by entry id and by the citation string built from the listed JSON.
    by_id = run_json(tmp_path, "show", "--scope", "project", citation["entry_id"])
    assert by_id == item
    listed_citation = citation_str(item["citation"])
    assert run_json(tmp_path, "show", "--scope", "project", listed_citation) == item
    # The citation from the write (revision 1) reads the same version back, as of revision 1.
    assert run_json(tmp_path, "show", "--scope", "project", citation_str(citation))["citation"] == citation

    # The human form prints the same citation string, on one line.
    text_out = ok(run(tmp_path, "show", "--scope", "project", "deploy-day")).stdout
    assert f"citation: {citation_str(items['deploy-day']['citation'])}" in text_out.splitlines()
    assert "We deploy on Fridays." in text_out.splitlines()


def test_show_by_old_citation_reads_the_exact_old_version(tmp_path: Path, lifecycle: list[dict[str, Any]]) -> None:
    first = next(c for c in lifecycle[0]["citations"] if c["entry_id"] == "alice-tea")  # from the import, revision 1

    old = run_json(tmp_path, "show", "--scope", SCOPE, citation_str(first))
    assert old["citation"] == first
    assert (old["entry"]["text"], old["entry"]["version"], old["state"]) == ("Alice likes tea.", 1, "active")

    current = run_json(tmp_path, "show", "--scope", SCOPE, "alice-tea")
    assert (current["entry"]["text"], current["entry"]["version"]) == ("Alice likes green tea.", 2)
    assert current["citation"]["revision"] == 4


def test_show_citation_of_another_scope_is_not_found(tmp_path: Path, two: None) -> None:
    other = remember(tmp_path, "other", "Something else.")["citations"][0]
    message = assert_error(run(tmp_path, "show", "--scope", SCOPE, citation_str(other)), NotFoundError.exit_code)
    assert "another memory" in message


# --- human-readable output (regressions) ----------------------------------------------------------------------------


def test_human_output_keeps_citations_on_one_line(tmp_path: Path, two: None) -> None:
    # Generated ids make citations ~90 characters long: wider than rich's 80-column default when not on a terminal.
    citation = re.compile(r"mem_\w+@\d+/[\w-]+/ver_\w+")
    shown = ok(run(tmp_path, "show", "--scope", SCOPE, "e1")).stdout.splitlines()
    assert any(re.fullmatch(rf"citation: {citation.pattern}", line) for line in shown), shown
    written = ok(run(tmp_path, "remember", "--scope", SCOPE, "Third.")).stdout.splitlines()
    assert written[0] == "remembered 1 entry in 'p' → revision 3"
    assert citation.fullmatch(written[1].strip()), written


def test_show_by_entry_id_that_contains_at_and_slash(tmp_path: Path, two: None) -> None:
    # validate_id accepts any printable ASCII without spaces, so these are legal entry ids.
    for entry_id in ("user@host/notes", "a@1/b/c"):
        remember(tmp_path, SCOPE, f"Odd id {entry_id}.", "--id", entry_id)
        shown = run_json(tmp_path, "show", "--scope", SCOPE, entry_id)
        assert (shown["entry"]["entry_id"], shown["entry"]["text"]) == (entry_id, f"Odd id {entry_id}.")


def test_show_by_citation_of_an_entry_id_that_contains_a_slash(tmp_path: Path, two: None) -> None:
    citation = remember(tmp_path, SCOPE, "Slash id.", "--id", "notes/2026")["citations"][0]
    assert run_json(tmp_path, "show", "--scope", SCOPE, citation_str(citation))["citation"] == citation


def test_markup_like_values_print_literally(tmp_path: Path) -> None:
    # Scopes, ids and texts are user data: rich markup ("[/]" would crash it) and emoji codes must print as typed.
    cases = [("x[/]", "plain", "Plain text."), (SCOPE, "a[/]b", "[red]danger[/red] literal [/] :smile:")]
    for scope, entry_id, text in cases:
        written = ok(run(tmp_path, "remember", "--scope", scope, "--id", entry_id, text)).stdout
        assert f"in {scope!r} → revision 1" in written
        assert f"/{entry_id}/ver_" in written
        listed = ok(run(tmp_path, "list", "--scope", scope)).stdout
        assert entry_id in listed
        assert text in listed
        shown = ok(run(tmp_path, "show", "--scope", scope, entry_id)).stdout.splitlines()
        assert shown[0] == f"{entry_id} v1 (fact, active)"
        assert shown[-1] == text
    listed_scopes = ok(run(tmp_path, "scopes")).stdout
    assert all(scope in listed_scopes for scope, _, _ in cases)


# --- 2. revise / retire / reactivate / history / changes / past revisions -------------------------------------------


def test_write_commands_each_create_one_revision(tmp_path: Path, lifecycle: list[dict[str, Any]]) -> None:
    assert [r["memory"]["revision"] for r in lifecycle] == [1, 2, 3, 4]
    assert len({r["memory"]["artifact_id"] for r in lifecycle}) == 1
    assert [len(r["citations"]) for r in lifecycle] == [2, 1, 1, 1]
    # retire/reactivate cite the version that stays current (v2, written by revise).
    revised_version = lifecycle[1]["citations"][0]["entry_version_id"]
    assert lifecycle[2]["citations"][0]["entry_version_id"] == revised_version
    assert lifecycle[3]["citations"][0]["entry_version_id"] == revised_version
    assert [r["citations"][0]["revision"] for r in lifecycle] == [1, 2, 3, 4]
    summary = scopes(tmp_path)[SCOPE]
    assert (summary["head_revision"], summary["active_count"], summary["retired_count"]) == (4, 2, 0)


def test_history_lists_every_change_of_an_entry(tmp_path: Path, lifecycle: list[dict[str, Any]]) -> None:
    history = run_json(tmp_path, "history", "--scope", SCOPE, "alice-tea")
    assert history["entry_id"] == "alice-tea"
    assert history["memory"]["revision"] == 4
    events = history["events"]
    assert [e["revision"] for e in events] == [1, 2, 3, 4]
    assert [e["operation"] for e in events] == ["remember", "revise", "retire", "reactivate"]
    assert [e["state"] for e in events] == ["active", "active", "retired", "active"]
    assert [e["entry"]["version"] for e in events] == [1, 2, 2, 2]
    assert [e["entry"]["text"] for e in events] == ["Alice likes tea."] + ["Alice likes green tea."] * 3
    assert [e["entry"]["metadata"] for e in events] == [{"v": 1}] + [{"v": 2}] * 3
    assert events[1]["entry"]["kind"] == "preference"  # kept by revise when --kind is absent

    untouched = run_json(tmp_path, "history", "--scope", SCOPE, "bob-coffee")["events"]
    assert [(e["revision"], e["operation"]) for e in untouched] == [(1, "remember")]


def test_changes_since_lists_only_later_revisions(tmp_path: Path, lifecycle: list[dict[str, Any]]) -> None:
    everything = run_json(tmp_path, "changes", "--scope", SCOPE)
    assert everything["since_revision"] == 0
    assert sorted((c["revision"], c["operation"], c["entry_id"]) for c in everything["changes"]) == [
        (1, "remember", "alice-tea"), (1, "remember", "bob-coffee"),
        (2, "revise", "alice-tea"), (3, "retire", "alice-tea"), (4, "reactivate", "alice-tea"),
    ]

    later = run_json(tmp_path, "changes", "--scope", SCOPE, "--since", "2")
    assert later["since_revision"] == 2
    assert [(c["revision"], c["operation"], c["state"]) for c in later["changes"]] == [
        (3, "retire", "retired"), (4, "reactivate", "active"),
    ]
    assert run_json(tmp_path, "changes", "--scope", SCOPE, "--since", "4")["changes"] == []


@pytest.mark.parametrize(
    ("revision", "flags", "expected"),
    [
        (1, ["--all"], {"alice-tea": ("active", "Alice likes tea.", 1)}),
        (2, ["--all"], {"alice-tea": ("active", "Alice likes green tea.", 2)}),
        (3, ["--all"], {"alice-tea": ("retired", "Alice likes green tea.", 2)}),
        (3, [], {}),  # without --all, retired entries are hidden
        (4, [], {"alice-tea": ("active", "Alice likes green tea.", 2)}),
    ],
    ids=["r1", "r2", "r3-all", "r3-active", "r4"],
)
def test_list_at_a_past_revision_shows_the_manifest_as_it_stood(
    tmp_path: Path, lifecycle: list[dict[str, Any]], revision: int, flags: list[str], expected: dict[str, Any]
) -> None:
    page = run_json(tmp_path, "list", "--scope", SCOPE, "--revision", str(revision), *flags)
    assert page["memory"]["revision"] == revision
    got = {eid: (e["state"], e["entry"]["text"], e["entry"]["version"]) for eid, e in entries_by_id(page).items()}
    assert got == {**expected, "bob-coffee": ("active", "Bob likes coffee.", 1)}
    assert {e["citation"]["revision"] for e in page["entries"]} == {revision}


def test_show_at_a_past_revision(tmp_path: Path, lifecycle: list[dict[str, Any]]) -> None:
    old = run_json(tmp_path, "show", "--scope", SCOPE, "--revision", "1", "alice-tea")
    assert (old["entry"]["text"], old["entry"]["version"], old["citation"]["revision"]) == ("Alice likes tea.", 1, 1)
    retired = run_json(tmp_path, "show", "--scope", SCOPE, "--revision", "3", "alice-tea")
    assert (retired["state"], retired["entry"]["version"]) == ("retired", 2)


def test_list_of_a_revision_past_the_head_is_not_found(tmp_path: Path, two: None) -> None:
    message = assert_error(run(tmp_path, "list", "--scope", SCOPE, "--revision", "3"), NotFoundError.exit_code)
    assert "revision 3" in message


def test_revise_with_unchanged_content_writes_no_revision(tmp_path: Path, two: None) -> None:
    result = run_json(tmp_path, "revise", "--scope", SCOPE, "e1", "  First.  ")
    assert result["memory"]["revision"] == 2
    assert head(tmp_path, SCOPE) == 2


def test_revise_can_change_kind_and_metadata(tmp_path: Path, two: None) -> None:
    result = run_json(tmp_path, "revise", "--scope", SCOPE, "--kind", "decision", "--metadata", '{"by": "me"}',
                      "e1", "First, revised.")
    assert result["memory"]["revision"] == 3
    shown = run_json(tmp_path, "show", "--scope", SCOPE, "e1")["entry"]
    assert (shown["kind"], shown["metadata"], shown["text"], shown["version"]) == (
        "decision", {"by": "me"}, "First, revised.", 2,
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["retire", "--scope", SCOPE, "alice-tea"], "it is retired"),
        (["revise", "--scope", SCOPE, "alice-tea", "New text."], "is retired"),
        (["reactivate", "--scope", SCOPE, "bob-coffee"], "it is active"),
    ],
    ids=["retire-twice", "revise-retired", "reactivate-active"],
)
def test_state_conflicts_exit_3_and_write_nothing(
    tmp_path: Path, lifecycle: list[dict[str, Any]], args: list[str], fragment: str
) -> None:
    run_json(tmp_path, "retire", "--scope", SCOPE, "--expected-revision", "4", "alice-tea")
    before = store_bytes(tmp_path)
    message = assert_error(run(tmp_path, *args), RevisionConflictError.exit_code)
    assert fragment in message
    assert store_bytes(tmp_path) == before


# --- 3. compare-and-swap conflicts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["remember", "--scope", SCOPE, "--expected-revision", "1", "Another."],
        ["remember", "--scope", SCOPE, "--expected-revision", "0", "Another."],
        ["revise", "--scope", SCOPE, "--expected-revision", "1", "e1", "Changed."],
        ["retire", "--scope", SCOPE, "--expected-revision", "3", "e1"],
        ["import", "--scope", SCOPE, "--expected-revision", "1", "{jsonl}", "--json"],
    ],
    ids=["remember-stale", "remember-zero", "revise", "retire", "import"],
)
def test_expected_revision_mismatch_exits_3_and_leaves_store_unchanged(
    tmp_path: Path, two: None, args: list[str]
) -> None:
    before = store_bytes(tmp_path)
    source = write_jsonl(tmp_path / "in.jsonl", [jsonl({"text": "Imported."})])
    args = [str(source) if arg == "{jsonl}" else arg for arg in args]

    message = assert_error(run(tmp_path, *args), RevisionConflictError.exit_code)
    assert "expected revision" in message
    assert "head of scope is 2" in message

    after = run_json(tmp_path, "list", "--scope", SCOPE, "--all")
    assert after["memory"]["revision"] == 2
    got = {eid: (e["entry"]["text"], e["entry"]["version"], e["state"]) for eid, e in entries_by_id(after).items()}
    assert got == {"e1": ("First.", 1, "active"), "e2": ("Second.", 1, "active")}
    assert store_bytes(tmp_path) == before


def test_reactivate_with_stale_expected_revision_exits_3(tmp_path: Path, lifecycle: list[dict[str, Any]]) -> None:
    run_json(tmp_path, "retire", "--scope", SCOPE, "bob-coffee")
    assert_error(run(tmp_path, "reactivate", "--scope", SCOPE, "--expected-revision", "4", "bob-coffee"),
                 RevisionConflictError.exit_code)
    summary = scopes(tmp_path)[SCOPE]
    assert (summary["head_revision"], summary["retired_count"]) == (5, 1)


def test_matching_expected_revision_succeeds(tmp_path: Path) -> None:
    assert remember(tmp_path, SCOPE, "First.", "--expected-revision", "0")["memory"]["revision"] == 1
    assert remember(tmp_path, SCOPE, "Second.", "--expected-revision", "1", "--id", "e2")["memory"]["revision"] == 2
    assert run_json(tmp_path, "retire", "--scope", SCOPE, "--expected-revision", "2", "e2")["memory"]["revision"] == 3


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


# --- 7. demo --------------------------------------------------------------------------------------------------------


def _demo_expectations() -> tuple[int, int, int]:
    """(active, retired, head) that seeding DEMO_ENTRIES then applying DEMO_EDITS must produce."""
    retired = {entry_id for op, entry_id, _ in DEMO_EDITS if op == "retire"}
    return len(DEMO_ENTRIES) - len(retired), len(retired), 1 + len(DEMO_EDITS)


def test_demo_expectations_match_the_documented_numbers() -> None:
    assert _demo_expectations() == (17, 1, 3)


def test_demo_seeds_the_demo_scope(tmp_path: Path, demo: dict[str, Any]) -> None:
    active, retired, head_revision = _demo_expectations()
    assert demo["created"] is True
    assert demo["page"]["memory"]["scope"] == DEMO_SCOPE
    assert demo["page"]["memory"]["revision"] == head_revision

    summary = scopes(tmp_path)[DEMO_SCOPE]
    assert (summary["active_count"], summary["retired_count"], summary["head_revision"]) == (
        active, retired, head_revision,
    )

    page = entries_by_id(demo["page"])
    edited = {entry_id for _, entry_id, _ in DEMO_EDITS}
    assert set(page) == {entry_id for entry_id, *_ in DEMO_ENTRIES}
    for entry_id, kind, text, metadata in DEMO_ENTRIES:
        entry = page[entry_id]["entry"]
        assert (entry["kind"], entry["metadata"]) == (kind, metadata)
        if entry_id not in edited:
            assert (entry["text"], entry["version"], page[entry_id]["state"]) == (text, 1, "active")
    for op, entry_id, text in DEMO_EDITS:
        if op == "revise":
            assert (page[entry_id]["entry"]["text"], page[entry_id]["entry"]["version"]) == (text, 2)
            assert page[entry_id]["state"] == "active"
        else:
            assert page[entry_id]["state"] == "retired"

    # Revision 1 is the original import: everything active at version 1.
    original = entries_by_id(run_json(tmp_path, "list", "--scope", DEMO_SCOPE, "--revision", "1", "--all"))
    assert {(e["state"], e["entry"]["version"]) for e in original.values()} == {("active", 1)}
    assert {eid: e["entry"]["text"] for eid, e in original.items()} == {eid: text for eid, _, text, _ in DEMO_ENTRIES}


def test_demo_twice_leaves_the_scope_unchanged(tmp_path: Path, demo: dict[str, Any]) -> None:
    before = store_bytes(tmp_path)
    again = run_json(tmp_path, "demo")
    assert again["created"] is False
    assert again["db"] == str(store_path(tmp_path))
    assert again["page"] == demo["page"]  # same head revision, same entries
    assert again["page"]["memory"]["revision"] == _demo_expectations()[2]
    text_run = ok(run(tmp_path, "demo"))
    assert "already present" in text_run.stdout
    assert head(tmp_path, DEMO_SCOPE) == _demo_expectations()[2]
    assert store_bytes(tmp_path) == before


def test_demo_into_a_custom_scope(tmp_path: Path) -> None:
    active, retired, head_revision = _demo_expectations()
    assert run_json(tmp_path, "demo", "--scope", "sandbox")["created"] is True
    summary = scopes(tmp_path)
    assert list(summary) == ["sandbox"]
    assert (summary["sandbox"]["active_count"], summary["sandbox"]["retired_count"]) == (active, retired)
    assert summary["sandbox"]["head_revision"] == head_revision


def test_demo_does_not_touch_an_existing_scope_of_that_name(tmp_path: Path) -> None:
    remember(tmp_path, DEMO_SCOPE, "My own entry.", "--id", "mine")
    result = run_json(tmp_path, "demo")
    assert result["created"] is False
    assert result["page"]["memory"]["revision"] == 1
    assert list(entries_by_id(result["page"])) == ["mine"]


# --- 8. PCMEM_DB ------------------------------------------------------------------------------------------------------


def test_pcmem_db_env_selects_the_store(tmp_path: Path) -> None:
    path = tmp_path / "from-env.duckdb"
    env = {"PCMEM_DB": str(path)}

    where = json.loads(ok(invoke(["where", "--json"], env=env)).stdout)
    assert where == {"db": str(path), "exists": False}

    ok(invoke(["remember", "--scope", SCOPE, "--id", "env-entry", "Via the environment."], env=env))
    assert path.is_file()
    assert json.loads(ok(invoke(["where", "--json"], env=env)).stdout) == {"db": str(path), "exists": True}

    # The same file opened explicitly holds the entry.
    shown = json.loads(ok(invoke(["--db", str(path), "show", "--scope", SCOPE, "env-entry", "--json"])).stdout)
    assert shown["entry"]["text"] == "Via the environment."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["from-env.duckdb"]


def test_db_option_wins_over_pcmem_db(tmp_path: Path) -> None:
    env_path, option_path = tmp_path / "env.duckdb", tmp_path / "option.duckdb"
    result = invoke(["--db", str(option_path), "where", "--json"], env={"PCMEM_DB": str(env_path)})
    assert json.loads(ok(result).stdout) == {"db": str(option_path), "exists": False}


def test_where_falls_back_to_the_per_user_default(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    where = json.loads(ok(invoke(["where", "--json"], env=env)).stdout)
    assert where == {"db": str(tmp_path / "xdg" / "pcmem" / "memory.duckdb"), "exists": False}
    assert not (tmp_path / "xdg").exists()  # `where` never opens (or creates) the store

    plain = ok(invoke(["where"], env=env))
    assert plain.stdout == where["db"] + "\n"


# --- 9. help and --json on every command ---------------------------------------------------------------------------


COMMANDS = main.list_commands(click.Context(main))  # commands load lazily: main.commands fills on use


def test_main_help_and_version_do_not_touch_a_store(tmp_path: Path) -> None:
    help_result = ok(run(tmp_path, "--help"))
    assert "Quick start" in help_result.stdout
    for name in COMMANDS:
        assert name in help_result.stdout
    version = ok(run(tmp_path, "--version"))
    assert version.stdout.startswith("pcmem, version ")
    assert not store_path(tmp_path).exists()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(tmp_path: Path, name: str) -> None:
    for flag in ("--help", "-h"):
        result = ok(run(tmp_path, name, flag))
        assert result.stdout.startswith(f"Usage: main {name} [OPTIONS]")
        assert "--json" in result.stdout
        if name != "where":
            assert "Example" in result.stdout
            assert f"pcmem {name}" in result.stdout.split("Example", 1)[1]
    assert not store_path(tmp_path).exists()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_declares_a_json_flag(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    flags = [p for p in command.params if isinstance(p, click.Option) and "--json" in p.opts]
    assert len(flags) == 1
    assert flags[0].is_flag
    assert flags[0].name == "as_json"


def _invocations(tmp_path: Path) -> dict[str, list[str]]:
    """One successful invocation of every command against the demo store."""
    source = write_jsonl(tmp_path / "more.jsonl", [jsonl({"text": "Imported."})])
    return {
        "remember": ["remember", "--scope", DEMO_SCOPE, "A new note."],
        "import": ["import", "--scope", DEMO_SCOPE, str(source)],
        "export": ["export", "--scope", DEMO_SCOPE, "--output", str(tmp_path / "exported.jsonl")],
        "context": ["context", "--scope", DEMO_SCOPE, "when do releases go out?"],
        "list": ["list", "--scope", DEMO_SCOPE],
        "show": ["show", "--scope", DEMO_SCOPE, "release-day"],
        "history": ["history", "--scope", DEMO_SCOPE, "release-day"],
        "changes": ["changes", "--scope", DEMO_SCOPE, "--since", "1"],
        "revise": ["revise", "--scope", DEMO_SCOPE, "release-owner", "Priya owns the checklist."],
        "retire": ["retire", "--scope", DEMO_SCOPE, "budget"],
        "reactivate": ["reactivate", "--scope", DEMO_SCOPE, "sync-later"],
        "forget": ["forget", "--scope", DEMO_SCOPE, "--yes", "font-choice"],
        "scopes": ["scopes"],
        "where": ["where"],
        "init": ["init"],
        "demo": ["demo"],
        "search": ["search", "--scope", DEMO_SCOPE, "when do releases go out?"],
        "reindex": ["reindex"],
        "models": ["models"],
        "fusion": ["fusion"],
        "bench": ["bench"],
        "check": ["check"],
        "doctor": ["doctor"],
        "tui": ["tui"],
        "serve": ["serve", "--port", "0", "--dry-run"],
        "mcp": ["mcp"],
        "migrate": ["migrate", "--from", str(store_path(tmp_path)), "--to", str(tmp_path / "copy.duckdb")],
    }


_READ_ONLY = ("list", "show", "history", "changes", "scopes", "where", "search", "models", "bench", "check",
              "fusion", "context", "export")


def test_every_command_runs_with_json_and_reads_run_without(tmp_path: Path, demo: dict[str, Any]) -> None:
    invocations = _invocations(tmp_path)
    assert set(invocations) == set(COMMANDS), "add an invocation for every registered command"
    for name in COMMANDS:
        result = run(tmp_path, *invocations[name], "--json")
        if not (name == "doctor" and result.exit_code == 1):  # doctor's documented "found a problem" (this process
            ok(result)  # may have loaded onnxruntime before pcmem could turn its telemetry off, for one)
        assert result.stderr == "", f"{name} wrote to stderr: {result.stderr!r}"
        assert isinstance(json.loads(result.stdout), (dict, list)), name
    for name in _READ_ONLY:
        result = ok(run(tmp_path, *invocations[name]))
        assert result.stdout.strip(), f"{name} printed nothing"
        with pytest.raises(json.JSONDecodeError):
            json.loads(result.stdout)


def test_a_search_that_finds_nothing_says_so_in_one_line(tmp_path):
    ok(run(tmp_path, "remember", "--scope", "s", "The team deploys on Fridays."))
    out = ok(run(tmp_path, "search", "--scope", "s", "--mode", "fts", "zebra")).stdout
    assert out.strip() == "no hits for 'zebra' in 's' @ revision 1 (mode fts): no entry passed admission (enough " \
        "query terms, or cosine ≥ 0.3)"


def test_changes_shows_the_reason_a_write_gave(tmp_path):
    """#29: a write's reason is kept with its revision; the CLI's changes table shows it when there is one."""
    import pcmem
    from pcmem import NewEntry, RememberRequest, RetireRequest

    db = tmp_path / "reasons.duckdb"
    with pcmem.open(db, embedder=None) as runtime:
        scope = runtime.memory.for_scope("s")
        scope.remember(RememberRequest(entries=(NewEntry(entry_id="tea", text="Ana drinks tea."),)))
        scope.retire(RetireRequest(entry_id="tea", expected_version=1, reason="Ana said she stopped"))
    result = CliRunner().invoke(main, ["--db", str(db), "changes", "--scope", "s"])
    assert result.exit_code == 0, result.output
    assert "reason" in result.output and "Ana said she stopped" in result.output
