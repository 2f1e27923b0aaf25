"""The optional retrievers, tested with the real frameworks when they are installed (pcmem[langchain], [llama-index])."""

from __future__ import annotations

import pytest
from fakes import HashEmbedder, TickingClock

import pcmem
from pcmem import Citation, NewEntry, RememberRequest


@pytest.fixture
def runtime(tmp_path):
    with pcmem.open(tmp_path / "i.duckdb", embedder=HashEmbedder(), clock=TickingClock()) as opened:
        opened.memory.for_scope("user:ana").remember(RememberRequest(entries=(
            NewEntry(text="Ana deploys on Fridays", entry_id="deploy", metadata={"source": "chat"}),
            NewEntry(text="Ana likes green tea", entry_id="tea", kind="preference"))))
        opened.memory.for_scope("project").remember(NewEntry(text="The deploy checklist is in the wiki",
                                                             entry_id="wiki"))
        yield opened


def test_langchain_retriever(runtime):
    pytest.importorskip("langchain_core")
    from pcmem.integrations.langchain import PcmemRetriever

    retriever = PcmemRetriever(memory=runtime.memory, scopes=["user:ana", "project"], mode="fts")
    documents = retriever.invoke("deploy")
    assert {d.metadata["entry_id"] for d in documents} == {"deploy", "wiki"}
    for document in documents:  # the citation reads back exactly what was returned
        citation = Citation.parse(document.metadata["citation"])
        scope = "project" if document.metadata["entry_id"] == "wiki" else "user:ana"
        assert runtime.memory.for_scope(scope).get(citation).entry.text == document.page_content
    only = PcmemRetriever(memory=runtime.memory, scopes=["user:ana"], filters={"kinds": ["preference"]})
    assert [d.metadata["entry_id"] for d in only.invoke("tea")] == ["tea"]


def test_llama_index_retriever(runtime):
    pytest.importorskip("llama_index.core")
    from pcmem.integrations.llama_index import PcmemLlamaRetriever

    retriever = PcmemLlamaRetriever(runtime.memory, ["user:ana", "project"], mode="fts")
    nodes = retriever.retrieve("deploy")
    assert {n.node.metadata["entry_id"] for n in nodes} == {"deploy", "wiki"}
    assert all(n.score and n.score > 0 for n in nodes)


async def test_langchain_ainvoke_on_both_runtimes_and_a_typed_error_for_a_wrong_memory(runtime, tmp_path):
    """Issue 29: ainvoke on the async runtime's memory crashed ('coroutine' object has no attribute 'hits')."""
    pytest.importorskip("langchain_core")
    from pcmem.integrations.langchain import PcmemRetriever

    documents = await PcmemRetriever(memory=runtime.memory, scopes=["user:ana", "project"], mode="fts").ainvoke("deploy")
    assert {d.metadata["entry_id"] for d in documents} == {"deploy", "wiki"}
    async with pcmem.open_async(tmp_path / "async.duckdb", embedder=HashEmbedder()) as opened:
        await opened.memory.for_scope("user:ben").remember("Ben deploys on Mondays", entry_id="deploy")
        retriever = PcmemRetriever(memory=opened.memory, scopes=["user:ben"], mode="fts")
        assert [d.page_content for d in await retriever.ainvoke("deploy")] == ["Ben deploys on Mondays"]
        assert [d.page_content for d in retriever.invoke("deploy")] == ["Ben deploys on Mondays"]
        for wrong in (opened, opened.memory.for_scope("user:ben"), object()):
            with pytest.raises(pcmem.InputError, match="runtime.memory"):
                PcmemRetriever(memory=wrong, scopes=["user:ben"])


async def test_llama_index_aretrieve_on_the_async_runtime(tmp_path):
    pytest.importorskip("llama_index.core")
    from pcmem.integrations.llama_index import PcmemLlamaRetriever

    async with pcmem.open_async(tmp_path / "async.duckdb", embedder=HashEmbedder()) as opened:
        await opened.memory.for_scope("user:ben").remember("Ben deploys on Mondays", entry_id="deploy")
        retriever = PcmemLlamaRetriever(opened.memory, ["user:ben"], mode="fts")
        assert [n.node.text for n in await retriever.aretrieve("deploy")] == ["Ben deploys on Mondays"]
        with pytest.raises(pcmem.InputError, match="runtime.memory"):
            PcmemLlamaRetriever(opened, ["user:ben"])
