"""A LlamaIndex retriever over pcmem search: ``PcmemLlamaRetriever(runtime.memory, scopes=["project"])``.

Each result is a ``NodeWithScore`` whose node is a ``TextNode`` (id: the entry version id, text: the entry text,
metadata as in :mod:`pcmem.integrations.langchain`) and whose score is the RRF sum. Needs
``pip install 'pcmem[llama-index]'``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pcmem.integrations import blocking_memory, hit_metadata, request_for, require, search, search_async
from pcmem.types.search import SearchPage

require("llama_index.core", "llama-index")

from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402


class PcmemLlamaRetriever(BaseRetriever):
    """Search one or several scopes of a pcmem store (``memory`` is ``runtime.memory`` of either runtime).

    ``retrieve`` and ``aretrieve`` both work; ``aretrieve`` searches in a worker thread. ``filters`` are
    SearchMemoryRequest filters (``kinds``, ``metadata``, ``created_from``, ``created_before``). Raises InputError
    for a ``memory`` that is not a runtime's memory, and what search raises.
    """

    def __init__(self, memory: Any, scopes: Sequence[str], *, limit: int = 10, mode: str = "auto",
                 filters: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._memory, self._scopes = blocking_memory(memory), list(scopes)
        self._limit, self._mode, self._filters = limit, mode, dict(filters or {})

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        request = request_for(query_bundle.query_str, self._limit, self._mode, self._filters)
        return _nodes(search(self._memory, self._scopes, request))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        request = request_for(query_bundle.query_str, self._limit, self._mode, self._filters)
        return _nodes(await search_async(self._memory, self._scopes, request))


def _nodes(page: SearchPage) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=hit.citation.entry_version_id, text=hit.text, metadata=hit_metadata(hit)),
                          score=hit.score) for hit in page.hits]
