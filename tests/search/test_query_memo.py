"""Query vectors are computed once per embedder and text (the store's search and an embedding reranker on the same
model share one; repeated queries are free), exactly, and a caller can never alter what the next one gets."""

from __future__ import annotations

import numpy as np

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.embedding.minilm import MiniLMEmbedder
from pcmem.embedding.vector_lru import VectorLRU
from pcmem.rerank.embedding import EmbeddingReranker
from pcmem.types.search import SearchMemoryRequest


def test_the_memo_is_an_lru_of_copies():
    computed: list[str] = []

    def compute(text: str) -> np.ndarray:
        computed.append(text)
        return np.full(3, float(len(text)), dtype=np.float32)

    memo = VectorLRU(size=2)
    first = memo.memoised("aa", compute)
    first[:] = -1  # the caller's copy
    assert memo.memoised("aa", compute).tolist() == [2.0, 2.0, 2.0] and computed == ["aa"]
    memo.memoised("b", compute)
    memo.memoised("aa", compute)  # "aa" is now the most recent
    memo.memoised("ccc", compute)  # evicts "b"
    assert computed == ["aa", "b", "ccc"]
    memo.memoised("aa", compute)
    memo.memoised("b", compute)
    assert computed == ["aa", "b", "ccc", "b"]


def test_a_query_is_embedded_once_by_the_search_and_the_reranker(tmp_path):
    embedder = MiniLMEmbedder(cache_dir=tmp_path / "models")
    calls: list[list[str]] = []
    embed_documents = embedder.embed_documents

    def counting(texts, progress=None):  # noqa: ANN001, ANN202 - the port's signature
        calls.append(list(texts))
        return embed_documents(texts, progress)

    embedder.embed_documents = counting  # type: ignore[method-assign]
    with pcmem.open(tmp_path / "s.duckdb", embedder=embedder) as runtime:
        memory = runtime.memory.for_scope("project")
        memory.remember(RememberRequest(entries=[NewEntry(kind="fact", text=t) for t in (
            "the desktop app ships on thursday", "lunch is at noon", "release notes for the desktop app")]))
        calls.clear()
        query = "when does the desktop app ship?"
        fresh = embed_documents([query])[0]
        page = memory.search(SearchMemoryRequest(query=query, limit=2, mode="hybrid"), reranker=EmbeddingReranker())
        assert page.rerank is not None and calls == [[query]]  # the vector channel's; the reranker reused it
        memory.search(SearchMemoryRequest(query=query, limit=2, mode="vector"))
        assert calls == [[query]]
        assert np.array_equal(embedder.embed_query(query), fresh)  # exactly the computed vector
