"""Issue 18: search filters, several scopes and paging — and how they meet SPEC §2's admission and RRF.

Every test pins the selected citations with a syrupy snapshot (ids and clock are deterministic), so a change in
which candidates survive filtering, channel truncation, admission or fusion shows up as a reviewed diff.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fakes import HashEmbedder, TickingClock

import pcmem
from pcmem import (
    InvalidCursorError,
    ListRequest,
    NewEntry,
    RememberRequest,
    RuntimeConfig,
    SearchMemoryRequest,
    StaleCursorError,
)


@pytest.fixture
def store(tmp_path, sequential_ids):
    with pcmem.open(tmp_path / "f.duckdb", embedder=HashEmbedder(), clock=TickingClock()) as runtime:
        yield runtime


def _cited(page) -> list[str]:
    return [f"{h.citation} {'+'.join(h.matched_by)} {h.score:.6f}" for h in page.hits]


def _seed_crowded(scope) -> None:
    """40 facts that match the query strongly, then 3 decisions that match it less well (but pass admission):
    unfiltered, the decisions never reach the top max(4·k, 32) = 32 of either channel."""
    scope.remember(RememberRequest(entries=tuple(
        NewEntry(text=f"deploy release deploy release checklist item {i}", entry_id=f"fact-{i:02d}",
                 metadata={"team": "web", "n": i}) for i in range(40))))
    scope.remember(RememberRequest(entries=tuple(
        NewEntry(text=f"deploy release board {i}",
                 kind="decision", entry_id=f"decision-{i}", metadata={"team": "ops", "n": i}) for i in range(3))))


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_a_filter_applies_before_channel_truncation(store, mode, snapshot):
    scope = store.memory.for_scope("project")
    _seed_crowded(scope)
    query = "deploy release"
    cut = store.backend.candidates("project", fts_terms=store.backend.analyzer.query_terms(query),
                                   query_vector=store.memory.parts.embedder.embed_query(query), limit=32)
    assert all(c.entry_id.startswith("fact") for c in (*cut.fts, *cut.vector))  # filtering after the cut finds 0
    unfiltered = scope.search(SearchMemoryRequest(query="deploy release", limit=3, mode=mode))
    assert all(h.kind == "fact" for h in unfiltered.hits)
    filtered = scope.search(SearchMemoryRequest(query="deploy release", limit=3, mode=mode, kinds=["decision"]))
    assert {h.citation.entry_id for h in filtered.hits} == {"decision-0", "decision-1", "decision-2"}
    assert _cited(filtered) == snapshot


def test_metadata_filter_is_top_level_equality_with_types_kept_apart(store, snapshot):
    scope = store.memory.for_scope("project")
    _seed_crowded(scope)
    scope.remember(NewEntry(text="deploy release flag", entry_id="flag-true", metadata={"team": "ops", "n": True}))
    ops = scope.search(SearchMemoryRequest(query="deploy release", mode="fts", metadata={"team": "ops"}))
    assert {h.citation.entry_id for h in ops.hits} == {"decision-0", "decision-1", "decision-2", "flag-true"}
    one = scope.search(SearchMemoryRequest(query="deploy release", mode="fts", metadata={"team": "ops", "n": 1}))
    assert [h.citation.entry_id for h in one.hits] == ["decision-1"]  # n: true is not n: 1
    assert scope.search(SearchMemoryRequest(query="deploy", metadata={"missing": None})).hits == ()
    assert _cited(ops) + _cited(one) == snapshot


def test_created_range_filter(store, snapshot):
    scope = store.memory.for_scope("project")
    for i in range(5):  # the ticking clock: one write per second from 2026-01-01 00:00:01
        scope.remember(NewEntry(text=f"standup note {i} about the deploy", entry_id=f"note-{i}"))
    request = SearchMemoryRequest(query="deploy", mode="fts", created_from=datetime(2026, 1, 1, 0, 0, 2),
                                  created_before=datetime(2026, 1, 1, 0, 0, 4, tzinfo=UTC))
    page = scope.search(request)
    assert sorted(h.citation.entry_id for h in page.hits) == ["note-1", "note-2"]
    assert _cited(page) == snapshot
    with pytest.raises(pcmem.InputError):
        SearchMemoryRequest(query="x", created_from=datetime(2026, 1, 2), created_before=datetime(2026, 1, 1))


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_several_scopes_fuse_once_and_keep_their_own_citations(store, mode, snapshot):
    ana, project = store.memory.for_scope("user:ana"), store.memory.for_scope("project")
    ana.remember(RememberRequest(entries=(NewEntry(text="Ana deploys on Fridays", entry_id="ana-deploy"),
                                          NewEntry(text="Ana likes green tea", entry_id="ana-tea"))))
    ana.remember(NewEntry(text="Ana reviews every deploy checklist", entry_id="ana-review"))
    project.remember(RememberRequest(entries=(NewEntry(text="The team deploys on Thursdays", entry_id="p-deploy"),
                                              NewEntry(text="deploy checklist lives in the wiki", entry_id="p-wiki"))))
    page = store.memory.search(SearchMemoryRequest(query="deploy checklist", mode=mode, limit=10),
                               scopes=["user:ana", "project", "nobody"])
    assert page.memory is None and [m.scope for m in page.memories] == ["user:ana", "project"]
    heads = {m.artifact_id: m.revision for m in page.memories}
    assert all(heads[h.citation.artifact_id] == h.citation.revision for h in page.hits)  # each its own head
    for hit in page.hits:  # every citation reads back exactly in its own scope
        owner = ana if hit.citation.artifact_id == page.memories[0].artifact_id else project
        assert owner.get(hit.citation).entry.text == hit.text
    scores = [h.score for h in page.hits]
    assert scores == sorted(scores, reverse=True)
    alone = ana.search(SearchMemoryRequest(query="deploy checklist", mode=mode, limit=10))
    assert {h.citation for h in alone.hits} <= {h.citation for h in page.hits}
    assert _cited(page) == snapshot


def test_several_scopes_cut_each_channel_over_the_union(store, snapshot):
    """max(4·k, 32) candidates per channel for the union, not per scope: 2 x 30 strong matches, limit 1."""
    for name in ("a", "b"):
        store.memory.for_scope(name).remember(RememberRequest(entries=tuple(
            NewEntry(text=f"deploy window {name} {i}" + " deploy" * (i % 4), entry_id=f"{name}-{i:02d}")
            for i in range(30))))
    page = store.memory.search(SearchMemoryRequest(query="deploy window", mode="fts", limit=5), scopes=["a", "b"])
    assert len(page.hits) == 5
    with pytest.raises(pcmem.InputError):
        store.memory.search("deploy", scopes=[])
    with pytest.raises(pcmem.InputError):
        store.memory.search("deploy", scopes="a")
    assert _cited(page) == snapshot


# --- paging -----------------------------------------------------------------------------------------------------


def test_list_pages_are_pinned_to_the_first_revision(store, snapshot):
    scope = store.memory.for_scope("project")
    scope.remember(RememberRequest(entries=tuple(NewEntry(text=f"note {i}", entry_id=f"n{i}") for i in range(5))))
    first = scope.list(ListRequest(limit=2))
    scope.remember(NewEntry(text="written between pages", entry_id="n0a"))  # sorts inside the first page's range
    pages, cursor = [first], first.next_cursor
    while cursor:
        pages.append(scope.list(ListRequest(limit=2, cursor=cursor)))
        cursor = pages[-1].next_cursor
    assert [e.entry.entry_id for p in pages for e in p.entries] == ["n0", "n1", "n2", "n3", "n4"]
    assert {p.memory.revision for p in pages} == {1} and scope.head().revision == 2
    assert [[str(e.citation) for e in p.entries] for p in pages] == snapshot
    with pytest.raises(InvalidCursorError):
        scope.list(ListRequest(limit=2, cursor=first.next_cursor + "x"))
    with pytest.raises(InvalidCursorError):
        scope.list(ListRequest(limit=2, cursor=first.next_cursor, state="all"))
    with pytest.raises(InvalidCursorError):
        store.memory.for_scope("other").list(ListRequest(cursor=first.next_cursor))
    with pytest.raises(pcmem.InputError):
        ListRequest(limit=101)
    scope.forget("n4")
    with pytest.raises(StaleCursorError):
        scope.list(ListRequest(limit=2, cursor=first.next_cursor))


def test_changes_pages_and_cursor_errors(store):
    scope = store.memory.for_scope("project")
    for i in range(3):
        scope.remember(RememberRequest(entries=(NewEntry(text=f"a{i}", entry_id=f"a{i}"),
                                                NewEntry(text=f"b{i}", entry_id=f"b{i}"))))
    first = scope.changes(1, limit=3)
    assert first.next_cursor is not None
    second = scope.changes(1, limit=3, cursor=first.next_cursor)
    assert second.next_cursor is None
    assert [(c.revision, c.entry_id) for c in first.changes + second.changes] == [
        (2, "a1"), (2, "b1"), (3, "a2"), (3, "b2")]
    with pytest.raises(InvalidCursorError):
        scope.changes(0, limit=3, cursor=first.next_cursor)  # another since_revision
    with pytest.raises(InvalidCursorError):
        scope.list(ListRequest(cursor=first.next_cursor))  # a changes cursor is not a list cursor
    with pytest.raises(pcmem.InputError):
        scope.changes(0, limit=0)


class _ReversingReranker:
    """A scripted reranker (the model is not what this test is about): records the pool, keeps it reversed."""

    policy_id = "test.reverse"

    def __init__(self) -> None:
        self.pools: list[list[str]] = []

    def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001
        from pcmem import MemoryRerankDecision

        self.pools.append([hit.citation.entry_id for hit in candidates])
        return MemoryRerankDecision(selected_ranks=tuple(range(len(candidates), 0, -1))[:limit])


def test_the_rerank_pool_is_max_k_c_over_the_union_of_filtered_scopes(store, snapshot):
    """With several scopes and a filter, the reranker sees one coarse pool of max(k, c) hits from the union."""
    for name in ("a", "b"):
        store.memory.for_scope(name).remember(RememberRequest(entries=tuple(
            NewEntry(text=f"deploy note {name} {i}", entry_id=f"{name}-{i:02d}", kind="odd" if i % 2 else "even")
            for i in range(20))))
    reranker = _ReversingReranker()
    with pcmem.open(store.backend.path, embedder=store.embedder,
                         config=RuntimeConfig(memory_rerank_candidate_limit=12)) as pooled:  # a pool of 12
        page = pooled.memory.search(SearchMemoryRequest(query="deploy note", mode="fts", limit=4, kinds=["odd"]),
                                    scopes=["a", "b"], reranker=reranker)
    pool = reranker.pools[0]
    assert len(pool) == 12 and all(int(entry.split("-")[1]) % 2 for entry in pool)  # max(4, 12), odd only
    assert {entry[0] for entry in pool} == {"a", "b"}  # drawn from both scopes
    assert [h.citation.entry_id for h in page.hits] == pool[::-1][:4]
    assert page.rerank is not None and len(page.rerank.candidates) == 12
    assert pool == snapshot


@pytest.mark.parametrize("mode", ["fts", "vector"])
def test_a_selective_filter_reads_deeper_until_the_channel_is_full_or_exhausted(store, mode, monkeypatch):
    scope = store.memory.for_scope("project")
    scope.remember(RememberRequest(entries=tuple(
        NewEntry(text=f"deploy release deploy release checklist item {i}", entry_id=f"fact-{i:03d}")
        for i in range(200))))
    scope.remember(RememberRequest(entries=tuple(
        NewEntry(text=f"deploy release board {i}", kind="decision", entry_id=f"decision-{i}") for i in range(3))))
    limits: list[int] = []
    original = store.backend.candidates

    def spy(*args, **kwargs):
        limits.append(kwargs["limit"])
        return original(*args, **kwargs)

    monkeypatch.setattr(store.backend, "candidates", spy)
    page = scope.search(SearchMemoryRequest(query="deploy release", limit=1, mode=mode, kinds=["decision"]))
    assert [h.citation.entry_id for h in page.hits] and page.hits[0].kind == "decision"
    assert limits == [128, 512]  # 4x the channel count of 32, then 4x more: the store had 203 candidates
    limits.clear()
    scope.search(SearchMemoryRequest(query="deploy release", limit=1, mode=mode, kinds=["fact"]))
    assert limits == [128]  # an unselective filter is satisfied by the first read
