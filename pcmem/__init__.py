"""pcmem: a single-file, fully offline DuckDB store of agent memory with PowerContext-compatible semantics.

Open a store, pick a scope, remember and read back with exact citations::

    import pcmem

    with pcmem.open_sync("memory.duckdb") as runtime:
        project = runtime.memory.for_scope("project")
        written = project.remember("The team deploys on Fridays after the 14:00 check.")
        print(written.citations[0])

This module imports neither Textual nor llama.cpp; heavy parts load only when used.
"""

from pcmem.errors import (
    CapabilityNotSupportedError,
    ConfigurationError,
    EmbeddingError,
    EntryNotFoundError,
    InputError,
    NotFoundError,
    PcmemError,
    RevisionConflictError,
    RevisionNotFoundError,
    ScopeNotFoundError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreMissingError,
    StorePermissionError,
    StoreReadOnlyError,
    StoreWALError,
    StoreVersionError,
)
from pcmem.memory.models import (
    Change,
    ChangesPage,
    Citation,
    EntryHistory,
    EntryPage,
    EntryVersion,
    HistoryEvent,
    ListRequest,
    MemoryEntry,
    MemoryRef,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    RevisionInfo,
    ScopeSummary,
    WriteResult,
)
from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.runtime import Runtime, SyncRuntime, open_runtime, open_sync
from pcmem.rerank.port import MemoryReranker, MemoryRerankDecision
from pcmem.search.models import MemoryHit, RerankTrace, SearchMemoryRequest, SearchPage
from pcmem.search.reindex import ReindexReport
from pcmem.usage import Usage

__version__ = "0.1.0"

__all__ = [
    "CapabilityNotSupportedError",
    "Change",
    "ChangesPage",
    "Citation",
    "ConfigurationError",
    "Embedder",
    "EmbeddingError",
    "EmbeddingProfile",
    "EntryHistory",
    "EntryNotFoundError",
    "EntryPage",
    "EntryVersion",
    "HistoryEvent",
    "InputError",
    "ListRequest",
    "MemoryEntry",
    "MemoryHit",
    "MemoryRef",
    "MemoryRerankDecision",
    "MemoryReranker",
    "NewEntry",
    "NotFoundError",
    "PcmemError",
    "ReactivateRequest",
    "ReindexReport",
    "RememberRequest",
    "RerankTrace",
    "RetireRequest",
    "ReviseRequest",
    "RevisionConflictError",
    "RevisionInfo",
    "RevisionNotFoundError",
    "Runtime",
    "ScopeNotFoundError",
    "ScopeSummary",
    "SearchMemoryRequest",
    "SearchPage",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreMissingError",
    "StorePermissionError",
    "StoreReadOnlyError",
    "StoreVersionError",
    "StoreWALError",
    "SyncRuntime",
    "Usage",
    "WriteResult",
    "__version__",
    "open_runtime",
    "open_sync",
]
