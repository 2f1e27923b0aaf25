"""A LlamaIndex retriever over pcmem search: ``PcmemLlamaRetriever(runtime.memory, scopes=["project"])``.

Each result is a ``NodeWithScore`` whose node is a ``TextNode`` (id: the entry version id, text: the entry text,
metadata as in :mod:`pcmem.integrations.langchain`) and whose score is the RRF sum. Needs
``pip install 'pcmem[llama-index]'``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pcmem.integrations import hit_metadata, request_for, require

require("llama_index.core", "llama-index")

from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402


class PcmemLlamaRetriever(BaseRetriever):
    """Search one or several scopes of a pcmem store (``memory`` is ``runtime.memory`` of a SyncRuntime).

    ``filters`` are SearchMemoryRequest filters (``kinds``, ``metadata``, ``created_from``, ``created_before``).
    Raises what search raises (InputError, CapabilityNotSupportedError, StoreError, ...).
    """

    def __init__(self, memory: Any, scopes: Sequence[str], *, limit: int = 10, mode: str = "auto",
                 filters: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._memory, self._scopes = memory, list(scopes)
        self._limit, self._mode, self._filters = limit, mode, dict(filters or {})

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        request = request_for(query_bundle.query_str, self._limit, self._mode, self._filters)
        if len(self._scopes) == 1:
            page = self._memory.for_scope(self._scopes[0]).search(request)
        else:
            page = self._memory.search(request, scopes=self._scopes)
        return [NodeWithScore(node=TextNode(id_=hit.citation.entry_version_id, text=hit.text,
                                            metadata=hit_metadata(hit)), score=hit.score) for hit in page.hits]
