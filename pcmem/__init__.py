"""pcmem: a single-file, fully offline DuckDB store of agent memory with PowerContext-compatible semantics.

Open a store, pick a scope, remember and read back with exact citations::

    import pcmem

    with pcmem.open("memory.duckdb") as runtime:
        project = runtime.memory.for_scope("project")
        written = project.remember("The team deploys on Fridays after the 14:00 check.")
        print(written.citations[0])

``import pcmem`` loads only the errors and sets the offline environment (:mod:`pcmem.offline`); every other name
loads its module on first use (see ``_LAZY``).
"""

import importlib
from typing import TYPE_CHECKING, Any

from pcmem import offline as _offline

_offline.apply()  # first: before anything can import onnxruntime (see pcmem.offline)

from pcmem.errors import (  # noqa: E402
    CapabilityNotSupportedError,
    ConcurrentWriteError,
    ConfigurationError,
    EmbeddingError,
    EntryErasedError,
    EntryNotFoundError,
    EntryStateError,
    InputError,
    InvalidCursorError,
    NotFoundError,
    OwnerGoneError,
    OwnerStoppedError,
    PcmemError,
    RevisionConflictError,
    RevisionNotFoundError,
    ScopeNotFoundError,
    StaleCursorError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreMissingError,
    StorePermissionError,
    StoreReadOnlyError,
    StoreSchemeError,
    StoreVersionError,
    StoreWALError,
)

if TYPE_CHECKING:
    from pcmem.compose.async_runtime import Runtime, open_async
    from pcmem.compose.rerankers import build_reranker
    from pcmem.compose.runtime import SyncRuntime, open
    from pcmem.config import InferenceConfig, RuntimeConfig
    from pcmem.decision.port import DecisionModel
    from pcmem.embedding.port import Embedder
    from pcmem.memory.scoped import SyncScopedMemory
    from pcmem.memory.service import MemoryService, ScopedMemory, SyncMemoryService
    from pcmem.rerank.port import MemoryReranker
    from pcmem.search.reindex import ReindexReport
    from pcmem.types.context import (
        ContextBlock,
        ContextItem,
        ContextOmission,
        ContextRequest,
        RecentEntry,
        RecentPage,
        RecentRequest,
        estimate_tokens,
    )
    from pcmem.types.embedding import EmbeddingProfile
    from pcmem.types.memory import (
        Change,
        ChangesPage,
        ChangesRequest,
        Citation,
        EntryHistory,
        EntryPage,
        EntryRequest,
        EntryVersion,
        ForgetRequest,
        HistoryEvent,
        HistoryRequest,
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
        Tombstone,
        WriteResult,
    )
    from pcmem.types.progress import Progress, StageProgress
    from pcmem.types.rerank import (
        MODEL_RERANK_POLICIES,
        RERANK_POLICIES,
        CandidateDecision,
        MemoryRerankDecision,
        RerankPolicy,
    )
    from pcmem.types.search import (
        SEARCH_MODES,
        MemoryHit,
        RerankTrace,
        SearchMemoryRequest,
        SearchMode,
        SearchPage,
        WarmReport,
    )
    from pcmem.types.usage import Usage
    from pcmem.validation import metadata_filter

__version__ = "0.1.0"

#: Every other public name, by the module it loads from on first use.
_LAZY: dict[str, str] = {
    name: module
    for module, names in {
        "pcmem.compose.async_runtime": ("Runtime", "open_async"),
        "pcmem.compose.runtime": ("SyncRuntime", "open"),
        "pcmem.decision.port": ("DecisionModel",),
        "pcmem.memory.scoped": ("SyncScopedMemory",),
        "pcmem.memory.service": ("MemoryService", "ScopedMemory", "SyncMemoryService"),
        "pcmem.compose.rerankers": ("build_reranker",),
        "pcmem.embedding.port": ("Embedder",),
        "pcmem.rerank.port": ("MemoryReranker",),
        "pcmem.search.reindex": ("ReindexReport",),
        "pcmem.config": ("InferenceConfig", "RuntimeConfig"),
        "pcmem.types.context": (
            "ContextBlock", "ContextItem", "ContextOmission", "ContextRequest", "RecentEntry", "RecentPage",
            "RecentRequest", "estimate_tokens",
        ),
        "pcmem.types.embedding": ("EmbeddingProfile",),
        "pcmem.types.memory": (
            "Change", "ChangesPage", "ChangesRequest", "Citation", "EntryHistory", "EntryPage", "EntryRequest",
            "EntryVersion", "ForgetRequest", "HistoryEvent", "HistoryRequest", "ListRequest", "MemoryEntry",
            "MemoryRef", "NewEntry", "ReactivateRequest", "RememberRequest", "RetireRequest", "ReviseRequest",
            "RevisionInfo", "ScopeSummary", "Tombstone", "WriteResult",
        ),
        "pcmem.types.progress": ("Progress", "StageProgress"),
        "pcmem.types.rerank": (
            "MODEL_RERANK_POLICIES", "RERANK_POLICIES", "CandidateDecision", "MemoryRerankDecision", "RerankPolicy",
        ),
        "pcmem.types.search": (
            "SEARCH_MODES", "MemoryHit", "RerankTrace", "SearchMemoryRequest", "SearchMode", "SearchPage", "WarmReport",
        ),
        "pcmem.types.usage": ("Usage",),
        "pcmem.validation": ("metadata_filter",),
    }.items()
    for name in names
}


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use: ``python -m pcmem`` imports this package before any command, and
    each command should pay only for what it uses (a full-text search needs neither numpy nor asyncio)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pcmem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "CandidateDecision",
    "CapabilityNotSupportedError",
    "Change",
    "ChangesPage",
    "ChangesRequest",
    "Citation",
    "ConcurrentWriteError",
    "ConfigurationError",
    "ContextBlock",
    "ContextItem",
    "ContextOmission",
    "ContextRequest",
    "DecisionModel",
    "Embedder",
    "EmbeddingError",
    "EmbeddingProfile",
    "EntryErasedError",
    "EntryHistory",
    "EntryNotFoundError",
    "EntryPage",
    "EntryRequest",
    "EntryStateError",
    "EntryVersion",
    "ForgetRequest",
    "HistoryEvent",
    "HistoryRequest",
    "InferenceConfig",
    "InputError",
    "InvalidCursorError",
    "ListRequest",
    "MODEL_RERANK_POLICIES",
    "MemoryEntry",
    "MemoryHit",
    "MemoryRef",
    "MemoryRerankDecision",
    "MemoryReranker",
    "MemoryService",
    "NewEntry",
    "NotFoundError",
    "OwnerGoneError",
    "OwnerStoppedError",
    "PcmemError",
    "Progress",
    "RERANK_POLICIES",
    "ReactivateRequest",
    "RecentEntry",
    "RecentPage",
    "RecentRequest",
    "ReindexReport",
    "RememberRequest",
    "RerankPolicy",
    "RerankTrace",
    "RetireRequest",
    "ReviseRequest",
    "RevisionConflictError",
    "RevisionInfo",
    "RevisionNotFoundError",
    "Runtime",
    "RuntimeConfig",
    "SEARCH_MODES",
    "ScopeNotFoundError",
    "ScopeSummary",
    "ScopedMemory",
    "SearchMemoryRequest",
    "SearchMode",
    "SearchPage",
    "StageProgress",
    "StaleCursorError",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreMissingError",
    "StorePermissionError",
    "StoreReadOnlyError",
    "StoreSchemeError",
    "StoreVersionError",
    "StoreWALError",
    "SyncMemoryService",
    "SyncRuntime",
    "SyncScopedMemory",
    "Tombstone",
    "Usage",
    "WarmReport",
    "WriteResult",
    "__version__",
    "build_reranker",
    "estimate_tokens",
    "metadata_filter",
    "open",
    "open_async",
]
