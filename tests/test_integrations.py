"""The optional retrievers, tested with the real frameworks when they are installed (pcmem[langchain], [llama-index])."""

from __future__ import annotations

import pytest
from conftest import HashEmbedder, TickingClock

import pcmem
from pcmem import Citation, NewEntry, RememberRequest


@pytest.fixture
def runtime(tmp_path):
    with pcmem.open_sync(tmp_path / "i.duckdb", embedder=HashEmbedder(), clock=TickingClock()) as opened:
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
