"""Adapters that let other frameworks use pcmem's search (optional extras; each module imports its framework).

- :mod:`pcmem.integrations.langchain` — a LangChain ``BaseRetriever`` (``pip install 'pcmem[langchain]'``).
- :mod:`pcmem.integrations.llama_index` — a LlamaIndex retriever (``pip install 'pcmem[llama-index]'``).

Both go through the public search API only: same admission, RRF, filters, several scopes and exact citations.
"""

from __future__ import annotations

from typing import Any

from pcmem.errors import ConfigurationError
from pcmem.types.memory import Citation
from pcmem.types.search import MemoryHit, SearchMemoryRequest


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


__all__ = ["Citation", "hit_metadata", "request_for", "require"]
