"""Scoped memory semantics on real DuckDB files: revisions, manifests, CAS, history, changes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcmem
from pcmem import (
    Citation,
    EntryNotFoundError,
    InputError,
    ListRequest,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    RevisionConflictError,
    RevisionNotFoundError,
)


def remember(memory, *texts: str, expected: int | None = None, **fields) -> pcmem.WriteResult:
    entries = tuple(NewEntry(text=text, **fields) for text in texts)
    return memory.remember(RememberRequest(entries=entries, expected_revision=expected))


def manifest(memory, revision: int | None = None, state: str = "all") -> dict[str, tuple[str, str]]:
    page = memory.list(ListRequest(revision=revision, state=state))
    return {e.entry.entry_id: (e.entry.text, e.state) for e in page.entries}


def test_remember_creates_revision_one_with_exact_citations(project):
    result = remember(project, "  We deploy on Fridays.  ", "Alice prefers tea", kind="fact")
    assert result.memory.revision == 1
    assert [c.revision for c in result.citations] == [1, 1]
    assert len({c.entry_id for c in result.citations}) == 2
    entry = project.get(result.citations[0])
    assert entry.entry.text == "We deploy on Fridays."
    assert entry.entry.version == 1
    assert entry.entry.created_in_revision == 1
    assert entry.citation == result.citations[0]


def test_text_is_nfc_normalised_and_hashed(project):
    import hashlib

    decomposed = "Cafe\u0301 au lait"
    result = remember(project, decomposed)
    stored = project.get(result.citations[0]).entry
    assert stored.text == "Caf\u00e9 au lait"
    assert stored.content_hash == hashlib.sha256(stored.text.encode()).hexdigest()


def test_metadata_round_trips_and_is_kept_on_revise(project):
    result = remember(project, "Met Bob at the conference", metadata={"turn": "D1:3", "at": "2023-05-08"})
    entry_id = result.citations[0].entry_id
    revised = project.revise(ReviseRequest(entry_id=entry_id, text="Met Bob at PyCon", expected_revision=1))
    assert project.get(revised.citations[0]).entry.metadata == {"at": "2023-05-08", "turn": "D1:3"}
    replaced = project.revise(
        ReviseRequest(entry_id=entry_id, text="Met Bob at PyCon", metadata={"turn": "D2:1"}, expected_revision=2)
    )
    assert project.get(replaced.citations[0]).entry.metadata == {"turn": "D2:1"}


def test_revise_retire_reactivate_and_past_manifests_are_exact(project):
    first = remember(project, "alpha", "beta", "gamma")
    a, b, c = (citation.entry_id for citation in first.citations)
    project.revise(ReviseRequest(entry_id=a, text="alpha v2", expected_revision=1))  # r2
    project.retire(RetireRequest(entry_id=b, expected_revision=2))  # r3
    remember(project, "delta", expected=3)  # r4
    project.reactivate(ReactivateRequest(entry_id=b, expected_revision=4))  # r5
    project.revise(ReviseRequest(entry_id=a, text="alpha v3", expected_revision=5))  # r6

    assert manifest(project, 1) == {a: ("alpha", "active"), b: ("beta", "active"), c: ("gamma", "active")}
    assert manifest(project, 2)[a] == ("alpha v2", "active")
    assert manifest(project, 3)[b] == ("beta", "retired")
    assert b not in manifest(project, 3, state="active")
    assert len(manifest(project, 4)) == 4
    assert manifest(project, 5)[b] == ("beta", "active")
    assert manifest(project, 6)[a] == ("alpha v3", "active")
    assert manifest(project) == manifest(project, 6)
    history = project.history(a)
    assert [(e.revision, e.operation, e.entry.version, e.entry.text) for e in history.events] == [
        (1, "remember", 1, "alpha"),
        (2, "revise", 2, "alpha v2"),
        (6, "revise", 3, "alpha v3"),
    ]
    changes = project.changes(3)
    assert [(ch.revision, ch.operation, ch.state) for ch in changes.changes] == [
        (4, "remember", "active"),
        (5, "reactivate", "active"),
        (6, "revise", "active"),
    ]
    assert [r.operation for r in project.revisions()] == ["remember", "revise", "retire", "remember", "reactivate", "revise"]


def test_citations_stay_valid_after_later_writes(project):
    first = remember(project, "the original")
    citation = first.citations[0]
    project.revise(ReviseRequest(entry_id=citation.entry_id, text="the replacement", expected_revision=1))
    project.retire(RetireRequest(entry_id=citation.entry_id, expected_revision=2))
    assert project.get(citation).entry.text == "the original"
    wrong_revision = citation.model_copy(update={"revision": 2})
    with pytest.raises(EntryNotFoundError):
        project.get(wrong_revision)
    with pytest.raises(RevisionNotFoundError):
        project.get(citation.model_copy(update={"revision": 9}))
    other = Citation(artifact_id="mem_other", revision=1, entry_id=citation.entry_id,
                     entry_version_id=citation.entry_version_id)
    with pytest.raises(EntryNotFoundError):
        project.get(other)


def test_compare_and_swap_conflicts_are_typed_and_write_nothing(project):
    remember(project, "one")
    with pytest.raises(RevisionConflictError) as conflict:
        remember(project, "two", expected=0)
    assert (conflict.value.expected, conflict.value.actual) == (0, 1)
    entry_id = project.list().entries[0].entry.entry_id
    remember(project, "three", expected=1)
    with pytest.raises(RevisionConflictError):
        project.revise(ReviseRequest(entry_id=entry_id, text="stale", expected_revision=1))
    with pytest.raises(RevisionConflictError):
        project.retire(RetireRequest(entry_id=entry_id, expected_revision=1))
    assert project.head().revision == 2
    assert sorted(text for text, _ in manifest(project).values()) == ["one", "three"]


def test_state_transitions_are_checked(project):
    entry_id = remember(project, "x").citations[0].entry_id
    with pytest.raises(RevisionConflictError, match="is active"):
        project.reactivate(ReactivateRequest(entry_id=entry_id, expected_revision=1))
    project.retire(RetireRequest(entry_id=entry_id, expected_revision=1))
    with pytest.raises(RevisionConflictError, match="is retired"):
        project.retire(RetireRequest(entry_id=entry_id, expected_revision=2))
    with pytest.raises(RevisionConflictError, match="retired"):
        project.revise(ReviseRequest(entry_id=entry_id, text="y", expected_revision=2))
    with pytest.raises(EntryNotFoundError):
        project.retire(RetireRequest(entry_id="no-such-entry", expected_revision=2))
    assert project.head().revision == 2


def test_unchanged_revise_writes_no_revision(project):
    entry_id = remember(project, "same").citations[0].entry_id
    result = project.revise(ReviseRequest(entry_id=entry_id, text="  same ", expected_revision=1))
    assert result.memory.revision == 1
    assert project.head().revision == 1


def test_chosen_entry_ids_must_be_unique(project):
    remember(project, "a", entry_id="fixed")
    with pytest.raises(InputError, match="already exist"):
        remember(project, "b", entry_id="fixed")
    with pytest.raises(InputError, match="unique"):
        RememberRequest(entries=(NewEntry(text="a", entry_id="x"), NewEntry(text="b", entry_id="x")))
    assert project.head().revision == 1


def test_unknown_scope_and_bad_revisions(runtime):
    nowhere = runtime.memory.for_scope("nowhere")
    assert nowhere.head() is None
    # One rule (issue 18): a scope with no memory reads as empty; an unknown entry is EntryNotFoundError.
    assert nowhere.list().entries == () and nowhere.list().memory is None
    assert nowhere.changes().changes == () and nowhere.revisions() == []
    for call in (lambda: nowhere.history("x"), lambda: nowhere.get_entry("x")):
        with pytest.raises(EntryNotFoundError):
            call()
    with pytest.raises(RevisionNotFoundError):
        nowhere.list(ListRequest(revision=1))
    project = runtime.memory.for_scope("project")
    remember(project, "a")
    with pytest.raises(RevisionNotFoundError):
        project.list(ListRequest(revision=2))
    with pytest.raises(RevisionNotFoundError):
        project.changes(5)
    with pytest.raises(InputError):
        project.changes(-1)


def test_scopes_are_isolated_and_summarised(runtime):
    work, home = runtime.memory.for_scope("work"), runtime.memory.for_scope("home")
    remember(work, "w1", "w2")
    remember(home, "h1")
    entry_id = work.list().entries[0].entry.entry_id
    work.retire(RetireRequest(entry_id=entry_id, expected_revision=1))
    summaries = {s.scope: s for s in runtime.memory.scopes()}
    assert (summaries["work"].active_count, summaries["work"].retired_count, summaries["work"].head_revision) == (1, 1, 2)
    assert (summaries["home"].active_count, summaries["home"].head_revision) == (1, 1)
    assert summaries["work"].artifact_id != summaries["home"].artifact_id
    with pytest.raises(EntryNotFoundError):
        home.get_entry(entry_id)


def test_store_survives_reopen(db_path):
    with pcmem.open(db_path) as first:
        citation = first.memory.for_scope("p").remember("persisted").citations[0]
    with pcmem.open(db_path) as second:
        assert second.memory.for_scope("p").get(citation).entry.text == "persisted"


# --- model-based check: any sequence of operations keeps every past manifest exact -------------------------------

operations = st.lists(
    st.tuples(st.sampled_from(["remember", "revise", "retire", "reactivate"]), st.integers(0, 7),
              st.text(alphabet="abcdefgh ", min_size=1, max_size=12)),
    min_size=1,
    max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_every_past_revision_matches_a_reference_model(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("model") / "m.duckdb"
    with pcmem.open(path) as runtime:
        memory = runtime.memory.for_scope("model")
        state: dict[str, tuple[str, str]] = {}  # entry_id -> (text, state)
        expected_manifests: dict[int, dict[str, tuple[str, str]]] = {}
        for op, pick, text in ops:
            head = 0 if memory.head() is None else memory.head().revision
            ids = sorted(state)
            target = ids[pick % len(ids)] if ids else None
            try:
                if op == "remember" or target is None:
                    written = memory.remember(RememberRequest(entries=(NewEntry(text=text),), expected_revision=head))
                    state[written.citations[0].entry_id] = (text.strip(), "active")
                elif op == "revise":
                    memory.revise(ReviseRequest(entry_id=target, text=text, expected_revision=head))
                    state[target] = (text.strip(), state[target][1])
                elif op == "retire":
                    memory.retire(RetireRequest(entry_id=target, expected_revision=head))
                    state[target] = (state[target][0], "retired")
                else:
                    memory.reactivate(ReactivateRequest(entry_id=target, expected_revision=head))
                    state[target] = (state[target][0], "active")
            except (RevisionConflictError, InputError):
                pass  # invalid transition or blank text: the store must be unchanged, checked below
            new_head = memory.head().revision if memory.head() else 0
            expected_manifests[new_head] = dict(state)
        for revision, expected in expected_manifests.items():
            if revision:
                assert manifest(memory, revision) == expected


def test_a_reason_is_checked_as_text_is(project):
    project.remember(NewEntry(text="We deploy on Fridays.", entry_id="deploy"))
    with pytest.raises(InputError, match="reason contains control character U\\+001B"):
        RetireRequest(entry_id="deploy", expected_version=1, reason="see \x1b[31m")
    with pytest.raises(InputError, match="reason is 513 characters; the limit is 512"):
        RetireRequest(entry_id="deploy", expected_version=1, reason="x" * 513)
    with pytest.raises(InputError, match="reason is 9000 characters; the limit is 512"):  # #38: it named 8192
        RetireRequest(entry_id="deploy", expected_version=1, reason="x" * 9000)
    project.retire(RetireRequest(entry_id="deploy", expected_version=1, reason="   "))  # blank: no reason
    assert [c.reason for c in project.changes(1).changes] == [None]
