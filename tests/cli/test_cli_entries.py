"""The command line's entries: remember, list and show round trips, human-readable output, revise / retire /
reactivate / history / changes / past revisions, and compare-and-swap conflicts.

End-to-end through click's CliRunner, each test on its own store file under ``tmp_path`` (helpers: tests/cli_runner.py;
seeded stores: tests/cli/conftest.py)."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from cli_runner import (
    SCOPE,
    assert_error,
    citation_str,
    entries_by_id,
    head,
    jsonl,
    ok,
    remember,
    run,
    run_json,
    scopes,
    store_bytes,
    write_jsonl,
)

from pcmem.errors import NotFoundError, RevisionConflictError

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
