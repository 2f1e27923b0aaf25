"""One contract for every storage backend: the DuckDB file and OceanBase seekdb (embedded) must behave the same.

Each test runs once per backend (``backend`` is parametrized). seekdb runs embedded, in one instance shared by the
session (see conftest.py), with vectors from a deterministic hash embedder: nothing is downloaded and no server is
started. Tests that need both engines at once (same data, same hits) open one of each.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import numpy as np
import pytest
from fakes import TextHashEmbedder, TickingClock

import pcmem
from pcmem import (
    EntryNotFoundError,
    ListRequest,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    RevisionConflictError,
    SearchMemoryRequest,
    StoreError,
)
from pcmem.compose.runtime import SyncRuntime
from pcmem.store.duckdb import DuckDBBackend
from pcmem.types.memory import EntryVersion
from pcmem.types.storage import EntryEvent


@pytest.fixture
def embedder() -> TextHashEmbedder:
    return TextHashEmbedder()


@pytest.fixture
def runtime(backend, embedder) -> SyncRuntime:
    return SyncRuntime(backend, embedder=embedder, clock=TickingClock())


@pytest.fixture
def project(runtime):
    return runtime.memory.for_scope("project")


def _ids(entries) -> list[str]:
    return [e.entry.entry_id for e in entries]


# --- revisions and citations -------------------------------------------------------------------------------------


def test_remember_revise_retire_reactivate_write_one_revision_each(project):
    first = project.remember(RememberRequest(entries=(NewEntry(text="We deploy on Fridays.", entry_id="deploy"),
                                                      NewEntry(text="Lea owns the budget.", entry_id="budget"))))
    assert first.memory.revision == 1 and [c.entry_id for c in first.citations] == ["deploy", "budget"]
    revised = project.revise(ReviseRequest(entry_id="deploy", expected_revision=1, text="We deploy on Mondays."))
    retired = project.retire(RetireRequest(entry_id="budget", expected_revision=2))
    back = project.reactivate(ReactivateRequest(entry_id="budget", expected_revision=3))
    assert [revised.memory.revision, retired.memory.revision, back.memory.revision] == [2, 3, 4]
    assert back.citations[0].entry_version_id == first.citations[1].entry_version_id  # same version, reactivated
    infos = project.revisions()
    assert [(r.revision, r.operation, r.change_count) for r in infos] == [
        (1, "remember", 2), (2, "revise", 1), (3, "retire", 1), (4, "reactivate", 1)]
    assert all(r.created_at.tzinfo is not None for r in infos)
    head = project.list(ListRequest(state="all"))
    assert [(e.entry.entry_id, e.state, e.entry.version) for e in head.entries] == [
        ("budget", "active", 1), ("deploy", "active", 2)]


def test_past_manifests_are_exact(project):
    snapshots = {}
    project.remember(RememberRequest(entries=tuple(NewEntry(text=f"note {i} about apples", entry_id=f"e{i}")
                                                   for i in range(4))))
    snapshots[1] = project.list(ListRequest(state="all")).entries
    project.revise(ReviseRequest(entry_id="e1", expected_revision=1, text="note 1 about pears"))
    snapshots[2] = project.list(ListRequest(state="all")).entries
    project.retire(RetireRequest(entry_id="e2", expected_revision=2))
    snapshots[3] = project.list(ListRequest(state="all")).entries
    project.remember(NewEntry(text="a later note", entry_id="e9"))
    project.revise(ReviseRequest(entry_id="e1", expected_revision=4, text="note 1 about plums"))
    for revision, expected in snapshots.items():
        assert project.list(ListRequest(state="all", revision=revision)).entries == expected
    active_at_3 = project.list(ListRequest(revision=3)).entries
    assert _ids(active_at_3) == ["e0", "e1", "e3"]
    assert active_at_3[1].entry.text == "note 1 about pears"


def test_citations_read_back_exactly_after_later_writes(project):
    cited = project.remember(NewEntry(text="The offsite is in March.", entry_id="offsite")).citations[0]
    project.revise(ReviseRequest(entry_id="offsite", expected_revision=1, text="The offsite is in April."))
    old = project.get(cited)
    assert old.entry.text == "The offsite is in March." and old.citation == cited
    stale = cited.model_copy(update={"revision": 2})
    with pytest.raises(EntryNotFoundError):
        project.get(stale)  # revision 2 cites the new version, not this one


HOSTILE_TEXTS = {
    "quotes": "O'Brien said \"ship it\"; DROP TABLE memories; --",
    "backslashes": "C:\\Users\\me\\notes.txt and a trailing \\",
    "percent": "100% of %s and %(name)s placeholders",
    "unicode": "emoji 🚀, 上海合作伙伴, ｆｕｌｌｗｉｄｔｈ, e\u0301",
    "newlines": "line one\nline two\ttabbed",
}


def test_any_valid_text_and_metadata_round_trip_exactly(project):
    metadata = {"note": "it's a \\ \"test\" %s", "n": [1, 2.5, None, True]}
    written = project.remember(RememberRequest(entries=tuple(
        NewEntry(entry_id=key, text=text, metadata=metadata) for key, text in HOSTILE_TEXTS.items())))
    for citation in written.citations:
        got = project.get(citation)
        expected = unicodedata.normalize("NFC", HOSTILE_TEXTS[citation.entry_id]).strip()
        assert got.entry.text == expected and got.entry.metadata == metadata
    hits = project.search(SearchMemoryRequest(query="O'Brien DROP TABLE", mode="fts")).hits
    assert hits and hits[0].citation.entry_id == "quotes"


def test_changes_and_history(project):
    project.remember(RememberRequest(entries=(NewEntry(text="alpha", entry_id="a"), NewEntry(text="beta", entry_id="b"))))
    project.revise(ReviseRequest(entry_id="a", expected_revision=1, text="alpha two"))
    project.retire(RetireRequest(entry_id="b", expected_revision=2))
    changes = project.changes(1).changes
    assert [(c.revision, c.operation, c.entry_id, c.state) for c in changes] == [
        (2, "revise", "a", "active"), (3, "retire", "b", "retired")]
    assert len(project.changes(0).changes) == 4
    history = project.history("a").events
    assert [(h.revision, h.operation, h.entry.text) for h in history] == [(1, "remember", "alpha"),
                                                                          (2, "revise", "alpha two")]


def test_entry_version_lookup(backend, project):
    written = project.remember(NewEntry(text="Kept forever.", metadata={"source": "t1", "n": [1, 2]}))
    citation = written.citations[0]
    version = backend.entry_versions([citation.entry_version_id, "ver_missing"])[citation.entry_version_id]
    assert version.text == "Kept forever." and version.metadata == {"source": "t1", "n": [1, 2]}
    assert version.created_at.tzinfo is not None and version.created_in_revision == 1
    assert backend.entry_versions(["ver_missing"]) == {}


def test_compare_and_swap_conflicts_write_nothing(backend, project):
    project.remember(NewEntry(text="first", entry_id="x"))
    with pytest.raises(RevisionConflictError) as raised:
        project.revise(ReviseRequest(entry_id="x", expected_revision=7, text="second"))
    assert (raised.value.expected, raised.value.actual) == (7, 1)
    with pytest.raises(RevisionConflictError):
        project.remember(RememberRequest(entries=(NewEntry(text="other"),), expected_revision=0))
    assert backend.find_memory("project").revision == 1


def test_an_exception_inside_write_leaves_nothing(backend, embedder):
    now = datetime(2026, 3, 1, tzinfo=UTC)
    backend.set_embedding_profile(embedder.profile)
    version = EntryVersion(entry_id="doomed", entry_version_id="ver_doomed", version=1, kind="fact",
                           text="zanzibar quokka", content_hash="h", metadata={}, created_in_revision=1, created_at=now)
    with pytest.raises(RuntimeError, match="boom"):
        with backend.write("fresh") as tx:
            tx.commit("remember", [version], [EntryEvent("doomed", "ver_doomed", "active")], now,
                      {"ver_doomed": embedder.vector("zanzibar quokka")})
            raise RuntimeError("boom")
    assert backend.find_memory("fresh") is None
    assert backend.scope_summaries() == []
    assert backend.entry_versions(["ver_doomed"]) == {}
    runtime = SyncRuntime(backend, embedder=embedder)
    scope = runtime.memory.for_scope("fresh")
    scope.remember(NewEntry(text="an unrelated note", entry_id="kept"))
    with pytest.raises(RuntimeError):
        with backend.write("fresh") as tx:
            tx.commit("retire", [], [EntryEvent("kept", tx.head_entry("kept").version.entry_version_id, "retired")], now)
            raise RuntimeError("boom")
    assert backend.find_memory("fresh").revision == 1
    assert [h.citation.entry_id for h in scope.search(SearchMemoryRequest(query="unrelated note", mode="fts")).hits] == ["kept"]
    assert backend.vector_status("fresh").complete



@pytest.mark.parametrize("case", ["unknown version", "entry twice"])
def test_a_commit_whose_events_do_not_hold_together_is_refused_and_writes_nothing(backend, case):
    """Both engines refuse, before writing, an event naming an entry version that was never stored, and a revision
    changing one entry twice (DuckDB used to accept the first and write a head pointing at nothing)."""
    runtime = SyncRuntime(backend, embedder=None)
    scope = runtime.memory.for_scope("checked")
    written = scope.remember(NewEntry(text="a note to point at", entry_id="kept"))
    stored = written.citations[0].entry_version_id
    now = datetime(2026, 1, 1, tzinfo=UTC)
    events = {
        "unknown version": [EntryEvent("kept", "ver_never_written", "active")],
        "entry twice": [EntryEvent("kept", stored, "retired"), EntryEvent("kept", stored, "active")],
    }[case]
    with pytest.raises(StoreError, match="unknown entry versions|at most once"):
        with backend.write("checked") as tx:
            tx.commit("reactivate", [], events, now)
    assert backend.find_memory("checked").revision == 1
    assert [(e.entry.entry_version_id, e.state) for e in scope.list(ListRequest(state="all")).entries] == [
        (stored, "active")]


def test_a_candidate_limit_below_one_is_refused(backend):
    with pytest.raises(StoreError, match="candidate limit must be positive"):
        backend.candidates("anything", fts_terms=["x"], query_vector=None, limit=0)

def test_scope_summaries(runtime):
    runtime.memory.for_scope("b-scope").remember(RememberRequest(entries=(NewEntry(text="one", entry_id="1"),
                                                                          NewEntry(text="two", entry_id="2"))))
    a = runtime.memory.for_scope("a-scope")
    a.remember(NewEntry(text="three", entry_id="3"))
    a.retire(RetireRequest(entry_id="3", expected_revision=1))
    summaries = runtime.backend.scope_summaries()
    assert [(s.scope, s.head_revision, s.active_count, s.retired_count) for s in summaries] == [
        ("a-scope", 2, 0, 1), ("b-scope", 1, 2, 0)]
    assert all(s.updated_at.tzinfo is not None for s in summaries)


def test_scopes_differing_only_by_trailing_space_are_distinct(runtime):
    runtime.memory.for_scope("team").remember(NewEntry(text="plain"))
    runtime.memory.for_scope("team ").remember(NewEntry(text="spaced"))
    assert [s.scope for s in runtime.backend.scope_summaries()] == ["team", "team "]


# --- full-text candidates ------------------------------------------------------------------------------------------


def _fts(backend, scope: str, query: str, limit: int = 32):
    terms = backend.analyzer.query_terms(query)
    return backend.candidates(scope, fts_terms=terms, query_vector=None, limit=limit).fts


def test_fts_candidates_count_distinct_matched_terms(backend, project):
    project.remember(RememberRequest(entries=(
        NewEntry(text="The release train leaves on Friday.", entry_id="both"),
        NewEntry(text="Release notes go to the wiki, release by release.", entry_id="release"),
        NewEntry(text="Friday lunch is pizza.", entry_id="friday"),
        NewEntry(text="Nothing relevant here.", entry_id="none"),
    )))
    found = {c.entry_id: c for c in _fts(backend, "project", "release friday")}
    assert set(found) == {"both", "release", "friday"}
    assert (found["both"].matched_terms, found["release"].matched_terms, found["friday"].matched_terms) == (2, 1, 1)
    assert all(c.score > 0 for c in found.values())
    assert _fts(backend, "project", "release friday")[0].entry_id == "both"  # both terms outrank one


def test_fts_sees_only_active_head_versions_at_once(backend, project):
    project.remember(RememberRequest(entries=(NewEntry(text="zebra crossing", entry_id="z"),
                                              NewEntry(text="zebra stripes", entry_id="s"))))
    other = project.head()
    project.revise(ReviseRequest(entry_id="z", expected_revision=1, text="pelican crossing"))
    assert [c.entry_id for c in _fts(backend, "project", "zebra")] == ["s"]
    assert [c.entry_id for c in _fts(backend, "project", "pelican")] == ["z"]
    project.retire(RetireRequest(entry_id="s", expected_revision=2))
    assert _fts(backend, "project", "zebra") == []
    project.reactivate(ReactivateRequest(entry_id="s", expected_revision=3))
    assert [c.entry_id for c in _fts(backend, "project", "zebra stripes")] == ["s"]
    assert other.revision == 1


def test_fts_is_scoped_and_matches_every_analysed_term(backend, runtime):
    mine, theirs = runtime.memory.for_scope("mine"), runtime.memory.for_scope("theirs")
    long_word = "x" * 120
    mine.remember(RememberRequest(entries=(
        NewEntry(text="Visit www example com for the docs", entry_id="web"),
        NewEntry(text="发布会在周五", entry_id="cjk"),
        NewEntry(text=f"token {long_word} end", entry_id="long"),
        NewEntry(text="a 2 b", entry_id="short"),
    )))
    theirs.remember(NewEntry(text="www example com elsewhere", entry_id="theirs"))
    assert [c.entry_id for c in _fts(backend, "mine", "www")] == ["web"]  # an InnoDB stopword in the engine
    assert [c.entry_id for c in _fts(backend, "mine", "发布")] == ["cjk"]  # one-character and bigram terms
    assert [c.entry_id for c in _fts(backend, "mine", long_word)] == ["long"]
    assert [c.entry_id for c in _fts(backend, "mine", "2")] == ["short"]
    assert _fts(backend, "nobody", "www") == []


def test_fts_ties_break_bytewise_and_limit_applies(backend, project):
    project.remember(RememberRequest(entries=tuple(NewEntry(text="same words here", entry_id=f"id-{c}") for c in "dbca")))
    found = _fts(backend, "project", "same words", limit=3)
    assert [c.entry_id for c in found] == ["id-a", "id-b", "id-c"]


# --- vector candidates ---------------------------------------------------------------------------------------------


def test_vector_candidates_match_a_numpy_reference_on_active_heads(backend, project, embedder):
    texts = {f"e{i:02d}": f"memory number {i} about topic {i % 7}" for i in range(40)}
    project.remember(RememberRequest(entries=tuple(NewEntry(text=t, entry_id=k) for k, t in texts.items())))
    project.revise(ReviseRequest(entry_id="e03", expected_revision=1, text="a revised memory"))
    project.retire(RetireRequest(entry_id="e05", expected_revision=2))
    texts["e03"] = "a revised memory"
    del texts["e05"]
    query = embedder.embed_query("topic 3 memory")
    found = backend.candidates("project", fts_terms=None, query_vector=query, limit=10).vector
    ids = list(texts)
    reference = embedder.embed_documents([texts[i] for i in ids]) @ query
    order = sorted(range(len(ids)), key=lambda i: -reference[i])[:10]
    assert [c.entry_id for c in found] == [ids[i] for i in order]
    assert np.allclose([c.score for c in found], [reference[i] for i in order], atol=1e-5)
    heads = {e.entry.entry_id: e.entry.entry_version_id for e in project.list().entries}
    assert all(heads[c.entry_id] == c.entry_version_id for c in found)


def test_vector_status_tracks_completeness(backend, embedder):
    now = datetime(2026, 3, 1, tzinfo=UTC)
    assert backend.vector_status("s").profile is None
    backend.set_embedding_profile(embedder.profile)
    version = EntryVersion(entry_id="e", entry_version_id="ver_e", version=1, kind="fact", text="no vector yet",
                           content_hash="h", metadata={}, created_in_revision=1, created_at=now)
    with backend.write("s") as tx:
        tx.commit("remember", [version], [EntryEvent("e", "ver_e", "active")], now)
    status = backend.vector_status("s")
    assert (status.memory.revision, status.profile, status.complete) == (1, embedder.profile, False)
    backend.store_vectors(embedder.profile, {"ver_e": embedder.vector("no vector yet")})
    assert backend.vector_status("s").complete
    found = backend.candidates("s", fts_terms=None, query_vector=embedder.vector("no vector yet"), limit=5).vector
    assert [(c.entry_version_id, round(c.score, 4)) for c in found] == [("ver_e", 1.0)]


def test_a_second_profile_cannot_replace_the_active_one_silently(request, backend, embedder):
    backend.set_embedding_profile(embedder.profile)
    backend.set_embedding_profile(embedder.profile)  # the same profile: a no-op
    with pytest.raises(StoreError):
        backend.set_embedding_profile(TextHashEmbedder(dimension=8, model_id="test/other").profile)
    assert backend.embedding_profile() == embedder.profile


# --- embedding switch ---------------------------------------------------------------------------------------------


def test_embedding_switch_pending_commit_and_resume(request, backend, runtime, embedder):
    project = runtime.memory.for_scope("project")
    project.remember(RememberRequest(entries=tuple(NewEntry(text=f"fact {i}", entry_id=f"f{i}") for i in range(5))))
    new = TextHashEmbedder(dimension=8, model_id="test/new")
    backend.begin_embedding_switch(new.profile)
    assert (backend.embedding_profile(), backend.pending_embedding_profile()) == (embedder.profile, new.profile)
    assert backend.count_missing_vectors(new.profile) == 5 and backend.count_missing_vectors(embedder.profile) == 0
    batch = backend.versions_missing_vectors(new.profile, 3)
    assert len(batch) == 3 and [v for v, _ in batch] == sorted(v for v, _ in batch)
    backend.store_vectors(new.profile, {v: new.vector(t) for v, t in batch})
    backend.begin_embedding_switch(new.profile)  # resuming keeps what was embedded
    assert backend.count_missing_vectors(new.profile) == 2
    assert backend.commit_embedding_switch(new.profile) is False  # not complete: nothing changes
    assert backend.embedding_profile() == embedder.profile
    rest = backend.versions_missing_vectors(new.profile, 100)
    backend.store_vectors(new.profile, {v: new.vector(t) for v, t in rest})
    project.remember(NewEntry(text="landed during the switch", entry_id="late"))  # embedded with the old profile only
    assert backend.commit_embedding_switch(new.profile) is False
    late = backend.versions_missing_vectors(new.profile, 100)
    assert [t for _, t in late] == ["landed during the switch"]
    backend.store_vectors(new.profile, {v: new.vector(t) for v, t in late})
    assert backend.commit_embedding_switch(new.profile) is True
    assert (backend.embedding_profile(), backend.pending_embedding_profile()) == (new.profile, None)
    with pytest.raises(StoreError):
        backend.versions_missing_vectors(embedder.profile, 10)  # the old profile is gone
    status = backend.vector_status("project")
    assert status.profile == new.profile and status.complete
    found = backend.candidates("project", fts_terms=None, query_vector=new.vector("fact 2"), limit=3).vector
    assert found[0].entry_id == "f2" and found[0].score == pytest.approx(1.0, abs=1e-5)


def test_a_different_pending_profile_is_abandoned(request, backend, runtime, embedder):
    runtime.memory.for_scope("p").remember(NewEntry(text="something", entry_id="s"))
    first, second = TextHashEmbedder(8, "test/first"), TextHashEmbedder(12, "test/second")
    backend.begin_embedding_switch(first.profile)
    backend.store_vectors(first.profile, {v: first.vector(t) for v, t in backend.versions_missing_vectors(first.profile, 9)})
    backend.begin_embedding_switch(second.profile)
    assert backend.pending_embedding_profile() == second.profile
    assert backend.count_missing_vectors(second.profile) == 1
    with pytest.raises(StoreError):
        backend.commit_embedding_switch(first.profile)
    with pytest.raises(StoreError):
        backend.count_missing_vectors(first.profile)
    backend.store_vectors(first.profile, {"ignored": first.vector("x")})  # silently dropped: not active or pending
    assert backend.embedding_profile() == embedder.profile


# --- paging cursors -----------------------------------------------------------------------------------------------


def test_the_paging_secret_is_made_once_and_kept_in_the_store(backend, project):
    """Cursors are signed with it (issue 26): the same key for every process and every reopening of one store."""
    secret = backend.paging_secret()
    assert len(secret) >= 32 and backend.paging_secret() == secret
    project.remember(RememberRequest(entries=tuple(NewEntry(text=f"note {i}", entry_id=f"n{i}") for i in range(3))))
    cursor = project.list(ListRequest(limit=2)).next_cursor
    backend.close()
    if isinstance(backend, DuckDBBackend):
        reopened = DuckDBBackend(backend.path)
    else:
        from pcmem.store.seekdb import SeekdbBackend

        reopened = SeekdbBackend(backend.target)
    try:
        assert reopened.paging_secret() == secret
        page = SyncRuntime(reopened, embedder=None).memory.for_scope("project").list(ListRequest(limit=2, cursor=cursor))
        assert [entry.entry.entry_id for entry in page.entries] == ["n2"]
    finally:
        reopened.close()


# --- end to end ---------------------------------------------------------------------------------------------------


def test_search_through_open_gives_the_same_hits_on_both_backends(tmp_path, seekdb_url):
    texts = [
        ("deploy", "We deploy to production every Friday after the smoke test."),
        ("budget", "Lea owns the offsite budget and approves travel."),
        ("fonts", "The font rendering bug only appears on Windows installers."),
        ("sync", "The sync protocol retries three times before giving up."),
        ("lunch", "Team lunch is on Thursdays at the Italian place."),
    ]
    pages = {}
    for name, target in (("duckdb", tmp_path / "e2e.duckdb"), ("seekdb", seekdb_url)):
        with pcmem.open(target, embedder=TextHashEmbedder(), clock=TickingClock()) as runtime:
            scope = runtime.memory.for_scope("team")
            scope.remember(RememberRequest(entries=tuple(NewEntry(text=t, entry_id=i) for i, t in texts)))
            scope.retire(RetireRequest(entry_id="lunch", expected_revision=1))
            pages[name] = {
                mode: [(h.citation.entry_id, h.citation.revision, h.matched_by) for h in scope.search(
                    SearchMemoryRequest(query="who approves the offsite travel budget", mode=mode)).hits]
                for mode in ("fts", "vector", "hybrid")
            }
            pages[name]["lunch"] = [h.citation.entry_id for h in scope.search(
                SearchMemoryRequest(query="Thursday lunch", mode="fts")).hits]
    assert pages["duckdb"] == pages["seekdb"]
    assert pages["seekdb"]["fts"][0] == ("budget", 2, ("fts",))
    assert pages["seekdb"]["lunch"] == []


# --- erasure (issue 18) -----------------------------------------------------------------------------------------


def test_forget_erases_every_version_and_keeps_a_tombstone(backend, project, embedder):
    from pcmem import EntryErasedError

    project.remember(RememberRequest(entries=(NewEntry(text="secret alpha token", entry_id="s", metadata={"k": 1}),
                                              NewEntry(text="keep this alpha note", entry_id="keep"))))
    old = project.revise(ReviseRequest(entry_id="s", expected_version=1, text="secret alpha token two")).citations[0]
    first = project.get_entry("s", revision=1).citation
    forgot = project.forget("s")
    assert forgot.memory.revision == 3 and project.revisions()[-1].operation == "forget"
    for call in (lambda: project.get(first), lambda: project.get(old), lambda: project.get_entry("s"),
                 lambda: project.get_entry("s", revision=1), lambda: project.history("s")):
        with pytest.raises(EntryErasedError) as raised:
            call()
        assert raised.value.tombstone.erased_in_revision == 3
    tombstone = project.tombstone("s")
    assert tombstone.entry_version_ids == (first.entry_version_id, old.entry_version_id)
    assert _ids(project.list(ListRequest(revision=1, state="all")).entries) == ["keep"]
    assert [(c.revision, c.entry_id, c.state) for c in project.changes().changes][-1] == (3, "s", "erased")
    assert backend.entry_versions([first.entry_version_id, old.entry_version_id]) == {}
    for mode in ("fts", "vector"):
        hits = project.search(SearchMemoryRequest(query="secret alpha token", mode=mode)).hits
        assert [h.citation.entry_id for h in hits] == ["keep"][: len(hits)]
    profile = backend.embedding_profile()
    assert backend.stored_vectors(profile, [first.entry_version_id, old.entry_version_id]) == {}
    assert project.forget("s").unchanged  # idempotent
    with pytest.raises(EntryErasedError):
        project.revise(ReviseRequest(entry_id="s", expected_version=2, text="x"))
    summary = {s.scope: s for s in backend.scope_summaries()}["project"]
    assert (summary.active_count, summary.retired_count) == (1, 0)
    # Issue 29: the key can be written again, as a new entry; the erased one stays erased (pcmem/memory/keys.py).
    again = project.remember("again", entry_id="s", upsert=True).citations[0]
    assert again.entry_id == "s~2" and project.get_entry("s").entry.text == "again"
    with pytest.raises(EntryErasedError):
        project.get(old)


def test_forget_scope_erases_everything_and_the_scope_stays_writable(backend, runtime):
    scope = runtime.memory.for_scope("user:ana")
    scope.remember(RememberRequest(entries=(NewEntry(text="Ana likes tea."), NewEntry(text="Ana lives in Porto."))))
    retired = scope.list().entries[0].entry.entry_id
    scope.retire(RetireRequest(entry_id=retired, expected_version=1))
    result = runtime.memory.forget_scope("user:ana")
    assert len(result.citations) == 2 and scope.list(ListRequest(state="all")).entries == ()
    assert scope.search("Ana").hits == () and scope.forget_scope().unchanged
    assert scope.remember("Ana moved to Lisbon.").memory.revision == 4


def test_the_reason_a_write_gives_is_kept_with_its_revision(project):
    project.remember(RememberRequest(entries=(NewEntry(text="alpha", entry_id="a"), NewEntry(text="beta", entry_id="b")),
                                     reason="from the kickoff notes"))
    project.revise(ReviseRequest(entry_id="a", expected_revision=1, text="alpha two", reason="  moved  "))
    project.retire(RetireRequest(entry_id="b", expected_version=1, reason="obsolete since March"))
    project.reactivate(ReactivateRequest(entry_id="b", expected_revision=3))  # no reason: none is kept
    assert [(c.revision, c.entry_id, c.reason) for c in project.changes(0).changes] == [
        (1, "a", "from the kickoff notes"), (1, "b", "from the kickoff notes"), (2, "a", "moved"),
        (3, "b", "obsolete since March"), (4, "b", None)]
    assert [r.reason for r in project.revisions()] == ["from the kickoff notes", "moved", "obsolete since March", None]
    assert [(e.revision, e.reason) for e in project.history("b").events] == [
        (1, "from the kickoff notes"), (3, "obsolete since March"), (4, None)]


def test_forget_erases_the_reasons_of_every_revision_that_wrote_the_entry(project):
    """Issue #38: a reason often quotes the value it replaced ("old was …"); forget left every one of them."""
    project.remember("phone 555-0100", entry_id="phone", reason="first number, from the kickoff")
    project.remember(RememberRequest(entries=(NewEntry(text="tea", entry_id="likes"),), reason="kept: about tea"))
    project.revise(ReviseRequest(entry_id="phone", expected_version=1, text="phone 555-0199",
                                 reason="old was 555-0100"))
    project.remember(RememberRequest(entries=(NewEntry(text="phone fax", entry_id="fax"),
                                              NewEntry(text="Porto", entry_id="city")), reason="fax 555-0100 too"))
    project.forget("phone")
    project.forget("fax")
    assert [(c.revision, c.entry_id, c.reason) for c in project.changes(0).changes] == [
        (1, "phone", None), (2, "likes", "kept: about tea"), (3, "phone", None), (4, "city", None), (4, "fax", None),
        (5, "phone", None), (6, "fax", None)]
    assert [r.reason for r in project.revisions()] == [None, "kept: about tea", None, None, None, None]
    assert [(e.revision, e.reason) for e in project.history("city").events] == [(4, None)]
    project.forget_scope()  # every reason of the scope goes
    assert [r.reason for r in project.revisions()] == [None] * 7


def test_a_seekdb_store_of_schema_version_1_is_upgraded_and_keeps_its_revisions(seekdb_url):
    """Schema version 2 added revisions.reason: an older store gets the column on open, and its revisions stay."""
    from pcmem.store.seekdb import SeekdbBackend
    from pcmem.store.seekdb.connector import Connector, parse
    from pcmem.store.seekdb.schema import SCHEMA_VERSION, meta

    with pcmem.open(seekdb_url, embedder=None) as runtime:
        runtime.memory.for_scope("p").remember(NewEntry(text="Deploys happen on Thursdays.", entry_id="d"))
    db = Connector(parse(seekdb_url)).connect()
    try:  # rewind the store to schema version 1
        db.run("ALTER TABLE revisions DROP COLUMN reason")
        db.run("UPDATE pcmem_meta SET meta_value = '1' WHERE meta_key = 'schema_version'")
    finally:
        db.close()
    backend = SeekdbBackend(seekdb_url)
    try:
        memory = SyncRuntime(backend, embedder=None).memory.for_scope("p")
        memory.retire(RetireRequest(entry_id="d", expected_revision=1, reason="moved to Fridays"))
        assert [(r.revision, r.reason) for r in memory.revisions()] == [(1, None), (2, "moved to Fridays")]
    finally:
        backend.close()
    db = Connector(parse(seekdb_url)).connect()
    try:
        assert meta(db, "schema_version") == SCHEMA_VERSION  # and every step after 2 (tests/api/test_write_records.py)
    finally:
        db.close()
