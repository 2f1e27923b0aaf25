"""A LangChain retriever over pcmem search: ``PcmemRetriever(memory=runtime.memory, scopes=["project"])``.

Each result is a ``Document`` whose ``page_content`` is the entry text and whose metadata holds the entry's own
metadata plus ``citation`` (``artifact@revision/entry/version``, readable back exactly with ``get``), ``entry_id``,
``kind``, ``score`` (the RRF sum) and ``matched_by``. Needs ``pip install 'pcmem[langchain]'``.
"""

from __future__ import annotations

from typing import Any

from pcmem.integrations import hit_metadata, request_for, require

require("langchain_core", "langchain")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict  # noqa: E402


class PcmemRetriever(BaseRetriever):
    """Search one or several scopes of a pcmem store (``memory`` is ``runtime.memory`` of a SyncRuntime).

    ``filters`` are SearchMemoryRequest filters (``kinds``, ``metadata``, ``created_from``, ``created_before``).
    Raises what search raises (InputError, CapabilityNotSupportedError, StoreError, ...).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    scopes: list[str]
    limit: int = 10
    mode: str = "auto"
    filters: dict[str, Any] = {}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        request = request_for(query, self.limit, self.mode, self.filters)
        if len(self.scopes) == 1:
            page = self.memory.for_scope(self.scopes[0]).search(request)
        else:
            page = self.memory.search(request, scopes=self.scopes)
        return [Document(page_content=hit.text, metadata=hit_metadata(hit)) for hit in page.hits]
