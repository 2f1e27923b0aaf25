"""A LangChain retriever over pcmem search: ``PcmemRetriever(memory=runtime.memory, scopes=["project"])``.

Each result is a ``Document`` whose ``page_content`` is the entry text and whose metadata holds the entry's own
metadata plus ``citation`` (``artifact@revision/entry/version``, readable back exactly with ``get``), ``entry_id``,
``kind``, ``score`` (the RRF sum) and ``matched_by``. Needs ``pip install 'pcmem[langchain]'``.
"""

from __future__ import annotations

from typing import Any

from pcmem.integrations import blocking_memory, hit_metadata, request_for, require, search, search_async
from pcmem.types.search import SearchPage

require("langchain_core", "langchain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict  # noqa: E402


class PcmemRetriever(BaseRetriever):
    """Search one or several scopes of a pcmem store (``memory`` is ``runtime.memory`` of either runtime).

    ``invoke`` and ``ainvoke`` both work; ``ainvoke`` searches in a worker thread. ``filters`` are
    SearchMemoryRequest filters (``kinds``, ``metadata``, ``created_from``, ``created_before``). Raises InputError
    for a ``memory`` that is not a runtime's memory, and what search raises (InputError,
    CapabilityNotSupportedError, StoreError, ...).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    scopes: list[str]
    limit: int = 10
    mode: str = "auto"
    filters: dict[str, Any] = {}

    def __init__(self, **fields: Any) -> None:
        if "memory" in fields:
            blocking_memory(fields["memory"])  # InputError itself, not wrapped in pydantic's ValidationError
        super().__init__(**fields)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        request = request_for(query, self.limit, self.mode, self.filters)
        return _documents(search(blocking_memory(self.memory), self.scopes, request))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        request = request_for(query, self.limit, self.mode, self.filters)
        return _documents(await search_async(blocking_memory(self.memory), self.scopes, request))


def _documents(page: SearchPage) -> list[Document]:
    return [Document(page_content=hit.text, metadata=hit_metadata(hit)) for hit in page.hits]
