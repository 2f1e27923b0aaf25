"""Adapters that let other frameworks use pcmem's search (optional extras; each module imports its framework).

- :mod:`pcmem.integrations.langchain` — a LangChain ``BaseRetriever`` (``pip install 'pcmem[langchain]'``).
- :mod:`pcmem.integrations.llama_index` — a LlamaIndex retriever (``pip install 'pcmem[llama-index]'``).

Both go through the public search API only: same admission, RRF, filters, several scopes and exact citations.
Both take ``runtime.memory`` of either runtime (``pcmem.open`` or ``pcmem.open_async``) and answer the framework's sync
and async calls alike: an async call runs the search in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pcmem.errors import ConfigurationError, InputError
from pcmem.memory.service import MemoryService, SyncMemoryService
from pcmem.types.memory import Citation
from pcmem.types.search import MemoryHit, SearchMemoryRequest, SearchPage


def require(module: str, extra: str) -> None:
    """Raise ConfigurationError naming the extra to install when ``module`` is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ConfigurationError(f"this integration needs {module}: pip install 'pcmem[{extra}]'")


def hit_metadata(hit: MemoryHit) -> dict[str, Any]:
    """What a framework document carries besides the text: the exact citation and how the hit was found."""
    return {**hit.metadata, "citation": str(hit.citation), "entry_id": hit.citation.entry_id, "kind": hit.kind,
            "score": hit.score, "matched_by": list(hit.matched_by)}


def request_for(query: str, limit: int, mode: str, filters: dict[str, Any]) -> SearchMemoryRequest:
    return SearchMemoryRequest(query=query, limit=limit, mode=mode, **filters)


def blocking_memory(memory: object) -> SyncMemoryService:
    """The blocking service behind ``memory`` (``runtime.memory`` of a SyncRuntime or of an async Runtime).

    Raises InputError for anything else (e.g. a runtime itself, or one scope's handle), at construction, so a
    wrong object fails with a clear message instead of an AttributeError on the first query.
    """
    from pcmem.owner.client import ClientMemoryService  # a runtime served by another process's owner

    if isinstance(memory, (SyncMemoryService, ClientMemoryService)):
        return memory  # type: ignore[return-value]  # the same methods
    if isinstance(memory, MemoryService):
        return memory.sync
    raise InputError(f"memory must be runtime.memory of a pcmem runtime (pcmem.open or pcmem.open_async), "
                     f"not {type(memory).__name__}")


def search(memory: SyncMemoryService, scopes: Sequence[str], request: SearchMemoryRequest) -> SearchPage:
    if len(scopes) == 1:
        return memory.for_scope(scopes[0]).search(request)
    return memory.search(request, scopes=scopes)


async def search_async(memory: SyncMemoryService, scopes: Sequence[str], request: SearchMemoryRequest) -> SearchPage:
    return await asyncio.to_thread(search, memory, scopes, request)


__all__ = ["Citation", "blocking_memory", "hit_metadata", "request_for", "require", "search", "search_async"]
