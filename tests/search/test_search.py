"""Hybrid search on real DuckDB files with the real embedding model (SPEC §2)."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

import pcmem
from pcmem import (
    CapabilityNotSupportedError,
    EmbeddingError,
    InputError,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
)
from pcmem.embedding.presets import default_embedder
from pcmem.errors import ConfigurationError
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.search import SearchMemoryRequest


def search(memory, query: str, mode: str = "auto", limit: int = 10):
    return memory.search(SearchMemoryRequest(query=query, mode=mode, limit=limit))


def ids(page) -> list[str]:
    return [hit.citation.entry_id for hit in page.hits]


NOTES = {
    "deploy": "The team deploys the desktop app every Thursday afternoon.",
    "tea": "Marco drinks oolong tea and never coffee.",
    "dog": "Priya adopted a beagle puppy named Biscuit in March.",
    "zh": "与上海合作伙伴的周会改到每周二上午十点。",
    "ja": "日本語のドキュメントは田中さんが翻訳します。",
}


@pytest.fixture
def notes(runtime):
    memory = runtime.memory.for_scope("notes")
    memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=k, text=t) for k, t in NOTES.items())))
    return memory


class FailingQueryEmbedder:
    """The real embedder, except that embedding a query fails (what the degrade rule is about)."""

    def __init__(self) -> None:
        self._real = default_embedder()
        self.profile = self._real.profile

    def embed_documents(self, texts, progress=None):
        return self._real.embed_documents(texts, progress)

    def embed_query(self, text):
        raise EmbeddingError("the query embedder is broken")


class OtherSpaceEmbedder(FailingQueryEmbedder):
    """The real model under another profile name: a different vector space as far as the store can tell."""

    def __init__(self) -> None:
        super().__init__()
        self.profile = EmbeddingProfile("example/other-model", 384, True)

    def embed_query(self, text):
        return self._real.embed_query(text)


# --- freshness and exactness -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_a_write_is_found_by_the_very_next_search(notes, mode):
    notes.remember(RememberRequest(entries=(NewEntry(entry_id="new", text="The quarterly budget review moved to Monday."),)))
    page = search(notes, "quarterly budget review", mode)
    assert ids(page)[0] == "new"
    assert page.mode == mode


def test_revised_and_retired_versions_never_appear_in_head_search(notes):
    head = notes.head().revision
    old_version = notes.get_entry("tea").entry.entry_version_id
    notes.revise(ReviseRequest(entry_id="tea", text="Marco switched to espresso coffee.", expected_revision=head))
    for mode in ("fts", "vector", "hybrid"):
        page = search(notes, "oolong tea", mode)
        assert old_version not in {h.citation.entry_version_id for h in page.hits}
        assert "espresso" in search(notes, "espresso coffee", mode).hits[0].text
    notes.retire(RetireRequest(entry_id="tea", expected_revision=head + 1))
    for mode in ("fts", "vector", "hybrid"):
        assert "tea" not in ids(search(notes, "espresso coffee Marco", mode))
    notes.reactivate(ReactivateRequest(entry_id="tea", expected_revision=head + 2))
    assert ids(search(notes, "espresso", "fts")) == ["tea"]


def test_hits_cite_the_head_revision_exactly(notes):
    notes.remember("Biscuit the beagle learned to sit.")
    page = search(notes, "beagle Biscuit", "hybrid")
    head = notes.head()
    assert page.memory == head
    assert {h.citation.revision for h in page.hits} == {head.revision}
    for hit in page.hits:
        assert notes.get(hit.citation).entry.text == hit.text
    assert page.hits[0].matched_by == ("fts", "vector")
    assert page.hits[0].score == pytest.approx(2 / 61)


def test_cjk_full_text_search(notes):
    assert ids(search(notes, "周会", "fts")) == ["zh"]
    assert ids(search(notes, "上海", "fts")) == ["zh"]
    assert ids(search(notes, "ドキュメント", "fts")) == ["ja"]
    assert ids(search(notes, "田中", "fts")) == ["ja"]


def test_metadata_is_returned_but_never_searched(runtime):
    memory = runtime.memory.for_scope("meta")
    memory.remember(RememberRequest(entries=(NewEntry(text="plain words", metadata={"secret": "zebra"}),)))
    assert search(memory, "zebra", "fts").hits == ()
    assert search(memory, "plain words", "fts").hits[0].metadata == {"secret": "zebra"}


def test_scopes_do_not_leak_into_each_other(runtime, notes):
    other = runtime.memory.for_scope("other")
    other.remember("Marco drinks oolong tea and never coffee.")
    assert ids(search(notes, "oolong", "hybrid")) == ["tea"]
    assert len(search(other, "oolong", "hybrid").hits) == 1


def test_empty_scope_returns_no_memory(runtime):
    page = search(runtime.memory.for_scope("nothing-here"), "anything")
    assert page.memory is None and page.hits == () and page.mode == "hybrid"


# --- admission ---------------------------------------------------------------------------------------------------


def test_fts_admission_needs_enough_distinct_terms(runtime):
    memory = runtime.memory.for_scope("admission")
    memory.remember(RememberRequest(entries=(
        NewEntry(entry_id="one", text="apple"),
        NewEntry(entry_id="two", text="apple banana"),
        NewEntry(entry_id="three", text="apple banana cherry"),
    )))
    assert sorted(ids(search(memory, "apple kiwi", "fts"))) == ["one", "three", "two"]  # |Q|=2: one term is enough
    assert sorted(ids(search(memory, "apple banana kiwi", "fts"))) == ["three", "two"]  # |Q|=3: needs 2
    nine = "apple banana cherry d1 d2 d3 d4 d5 d6"  # |Q|=9: needs max(2, ceil(2.25)) = 3
    assert ids(search(memory, nine, "fts")) == ["three"]


def test_vector_admission_drops_dissimilar_entries(notes):
    page = search(notes, "zxqv", "vector")
    embedder = default_embedder()
    query = embedder.embed_query("zxqv")
    for hit in page.hits:
        assert float(np.dot(embedder.embed_documents([hit.text])[0], query)) >= 0.3 - 1e-5


# --- mode by capability ------------------------------------------------------------------------------------------


def test_auto_without_embedder_is_fts_and_explicit_vector_modes_fail(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("p")
        memory.remember("full-text only store")
        assert search(memory, "store").mode == "fts"
        for mode in ("vector", "hybrid"):
            with pytest.raises(CapabilityNotSupportedError, match="needs an embedder"):
                search(memory, "store", mode)


def test_entries_without_vectors_make_vector_unavailable_until_reindex(db_path):
    with pcmem.open(db_path) as runtime:
        runtime.memory.for_scope("p").remember("written with vectors")
    with pcmem.open(db_path, embedder=None) as runtime:  # issue 16: refused, it would leave a vector missing
        with pytest.raises(ConfigurationError, match="embedder='auto'"):
            runtime.memory.for_scope("p").remember("refused without vectors")
    with pcmem.open(db_path) as runtime:
        runtime.memory.for_scope("p").remember("written without vectors")
    connection = duckdb.connect(str(db_path))  # a vector lost some other way (an older pcmem, a manual edit)
    connection.execute("DELETE FROM embeddings WHERE entry_version_id IN "
                       "(SELECT entry_version_id FROM entry_versions WHERE text = 'written without vectors')")
    connection.close()
    with pcmem.open(db_path) as runtime:
        memory = runtime.memory.for_scope("p")
        assert search(memory, "written").mode == "fts"
        with pytest.raises(CapabilityNotSupportedError, match="reindex"):
            search(memory, "written", "hybrid")
        assert runtime.reindex().embedded == 1
        assert search(memory, "written").mode == "hybrid"
        assert len(search(memory, "written", "vector").hits) == 2


def test_profile_change_needs_reindex(db_path):
    with pcmem.open(db_path) as runtime:
        runtime.memory.for_scope("p").remember("a sentence about gardening")
    with pcmem.open(db_path, embedder=OtherSpaceEmbedder()) as runtime:
        memory = runtime.memory.for_scope("p")
        assert search(memory, "gardening").mode == "fts"
        with pytest.raises(CapabilityNotSupportedError, match="profile"):
            search(memory, "gardening", "vector")
        report = runtime.reindex()
        assert report.previous_profile == default_embedder().profile and report.embedded == 1
        assert search(memory, "gardening", "vector").hits[0].text == "a sentence about gardening"


def test_auto_degrades_to_fts_only_when_query_embedding_fails(db_path):
    with pcmem.open(db_path) as runtime:
        runtime.memory.for_scope("p").remember("the cat sat on the mat")
    with pcmem.open(db_path, embedder=FailingQueryEmbedder()) as runtime:
        memory = runtime.memory.for_scope("p")
        page = search(memory, "cat")
        assert page.mode == "fts" and ids(page)
        for mode in ("vector", "hybrid"):
            with pytest.raises(EmbeddingError):
                search(memory, "cat", mode)


# --- bad input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [{"query": ""}, {"query": "   "}, {"query": "x" * 8193}, {"query": "ok", "limit": 0}, {"query": "ok", "limit": 51},
     {"query": "ok", "mode": "semantic"}, {"query": "bell\x07"}, {"query": "lone \udc00"}, {"query": 5}],
)
def test_bad_search_requests_are_input_errors(fields):
    with pytest.raises(InputError):
        SearchMemoryRequest(**fields)


@pytest.mark.parametrize(
    "query",
    ["'; DROP TABLE memories; --", 'a AND (b OR "unterminated', "* OR 1=1", "\\", "%_%", "NEAR(a b)", "$1 ?",
     "\u200f\u202e reversed", "🙂 emoji"],
)
def test_hostile_queries_are_answered_not_crashed(notes, query):
    head = notes.head()
    for mode in ("fts", "hybrid"):
        page = search(notes, query, mode)
        assert all(hit.citation.revision == head.revision for hit in page.hits)
    assert notes.head() == head
    assert len(notes.list().entries) == len(NOTES)


async def test_async_search_in_the_rfc_shape(db_path):
    async with pcmem.open_async(db_path) as runtime:
        await runtime.memory.for_scope("project").remember("Which deployment decision is current? Thursdays.")
        page = await runtime.memory.for_scope("project").search(
            SearchMemoryRequest(query="Which deployment decision is current?", limit=10, mode="hybrid")
        )
        assert page.hits[0].matched_by == ("fts", "vector")
        assert page.rerank is None


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracles import plainly_valid  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(list("\"'*()-:^~;%_\\/[]{}<>|&!?.,=+ ") + ["AND", "OR", "NOT", "NEAR", "kiwi"]),
             max_size=12).map(" ".join),
    st.sampled_from(["x" * 8193, "\u200f\u202e", "\x00", "\ud800", "🙂" * 10, "中" * 3000]),
))
def test_any_query_is_answered_or_refused_with_a_typed_error(notes, query):
    head = notes.head()
    for mode in ("fts", "hybrid"):
        try:
            request = SearchMemoryRequest(query=query, mode=mode)
        except InputError:
            assert not plainly_valid(query)
            return
        page = notes.search(request)
        assert all(hit.citation.revision == head.revision for hit in page.hits)
    assert notes.head() == head
