"""Issue 32 item 12: a page of ``list`` costs its page, not the scope. The DuckDB backend read the whole manifest of
the revision (and built an entry object for each of its entries) for every page, then cut the page out in Python:
a 100-entry page of a 10,000-entry scope cost as much as the whole listing."""

from __future__ import annotations

import pytest

import pcmem
from pcmem import ListRequest, NewEntry, RememberRequest
from pcmem.store.duckdb import reads

SIZE = 60


@pytest.fixture(scope="module")
def scope(tmp_path_factory):
    """60 entries over three revisions (ids out of creation order), one revised and one retired: a head and two
    past revisions to page through."""
    path = tmp_path_factory.mktemp("pages") / "p.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        for batch in range(3):
            memory.remember(RememberRequest(entries=tuple(
                NewEntry(text=f"note {i}", entry_id=f"e{(i * 37) % SIZE:03d}-{batch}")
                for i in range(batch * 20, batch * 20 + 20))))
        memory.revise("e000-0", text="note 0, revised", expected_version=1)
        memory.retire("e037-0", expected_version=1)
        yield memory


@pytest.fixture
def built(monkeypatch):
    """How many entry objects the DuckDB backend's reads build."""
    count = [0]
    real = reads.entry

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(reads, "entry", counting)
    return count


@pytest.mark.parametrize("revision", [None, 2])
def test_a_page_builds_only_its_own_entries(scope, built, revision):
    first = scope.list(ListRequest(limit=5, revision=revision, state="all"))
    assert len(first.entries) == 5 and first.next_cursor is not None
    assert built[0] <= 6  # the page and the one entry that says another page follows; was the whole revision
    built[0] = 0
    second = scope.list(ListRequest(limit=5, revision=revision, state="all", cursor=first.next_cursor))
    assert len(second.entries) == 5 and built[0] <= 6
    assert first.entries[-1].entry.entry_id < second.entries[0].entry.entry_id


@pytest.mark.parametrize("state", ["active", "all"])
@pytest.mark.parametrize("revision", [None, 1, 2, 5])
@pytest.mark.parametrize("limit", [1, 7, SIZE])
def test_pages_put_together_are_the_whole_listing(scope, revision, state, limit):
    whole = scope.list(ListRequest(revision=revision, state=state))
    paged, cursor = [], None
    while True:
        page = scope.list(ListRequest(revision=revision, state=state, limit=limit, cursor=cursor))
        paged.extend(page.entries)
        if (cursor := page.next_cursor) is None:
            break
        assert len(page.entries) == limit
    assert paged == list(whole.entries)
    assert [e.entry.entry_id for e in paged] == sorted(e.entry.entry_id for e in paged)


@pytest.fixture
def logged(monkeypatch):
    """How many revision and change objects the DuckDB backend's reads build."""
    count = {"revisions": 0, "changes": 0}

    def counting(kind, real):
        def build(*args, **kwargs):
            count[kind] += 1
            return real(*args, **kwargs)
        return build

    monkeypatch.setattr(reads, "RevisionInfo", counting("revisions", reads.RevisionInfo))
    monkeypatch.setattr(reads, "Change", counting("changes", reads.Change))
    return count


def test_a_cursor_page_reads_only_the_revisions_made_since_its_cursor(scope, logged):
    """A cursor is refused when an entry was forgotten after it was issued; checking that read the scope's whole
    revision log on every page (5 revisions here, every write of a long-lived scope in use)."""
    first = scope.list(ListRequest(limit=5))
    second = scope.list(ListRequest(limit=5, cursor=first.next_cursor))
    assert second.entries[0].entry.entry_id > first.entries[-1].entry.entry_id
    assert logged["revisions"] == 0  # nothing was written since the cursor was issued


def test_a_continued_changes_read_starts_where_it_stopped(scope, logged):
    """A changes page read every change since ``since_revision`` and dropped those before its cursor in Python."""
    whole = scope.changes(0)
    first = scope.changes(0, limit=25)
    logged["changes"] = 0
    second = scope.changes(0, limit=5, cursor=first.next_cursor)
    assert [*first.changes, *second.changes] == list(whole.changes[:30])
    # the first page stopped in revision 2: revision 1's 20 changes are not read again
    assert first.changes[-1].revision == 2 and logged["changes"] <= len(whole.changes) - 20
    pages, cursor = [], None
    while True:
        page = scope.changes(0, limit=7, cursor=cursor)
        pages.extend(page.changes)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == list(whole.changes)
