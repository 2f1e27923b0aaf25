"""The TUI's blocking calls on one store, in one place.

Every method here may take seconds (DuckDB, the embedding model, a local LLM), so screens call them only from
thread workers. Nothing here knows about Textual; screens turn results and :class:`pcmem.PcmemError` into messages.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pcmem
from pcmem import (
    MODEL_RERANK_POLICIES,
    EntryHistory,
    EntryPage,
    InferenceConfig,
    ListRequest,
    MemoryEntry,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    RevisionInfo,
    ScopeSummary,
    SearchMemoryRequest,
    SearchPage,
    StageProgress,
    SyncRuntime,
    WriteResult,
)

# StageProgress here: "verifying model" counts bytes, "reranking" counts candidates; total 0 = unknown.
MODEL_POLICIES = MODEL_RERANK_POLICIES
#: Policies that need no generation model (the embedding policy reads the store's own vectors).
MODEL_FREE_POLICIES = ("embedding",)


@dataclass(frozen=True)
class Manifest:
    """One revision's entries, and the scope's head so screens know whether it is the present."""

    page: EntryPage
    head: int

    @property
    def revision(self) -> int:
        return self.page.memory.revision if self.page.memory else 0  # 0: a scope with no memory yet

    @property
    def is_head(self) -> bool:
        return self.revision == self.head


@dataclass(frozen=True)
class EntryDetail:
    entry: MemoryEntry
    history: EntryHistory


@dataclass(frozen=True)
class SearchForm:
    """What the search screen's fields hold; validated by pcmem when the request is built (in the worker)."""

    scope: str
    query: str
    mode: str = "auto"
    limit: str | int = 10
    policy: str = "none"


class Session:
    """One open store plus the rerankers built on the configured model (each built once, on first use)."""

    def __init__(self, runtime: SyncRuntime, inference: InferenceConfig, *, owns_runtime: bool = False) -> None:
        self.runtime = runtime
        self.inference = inference
        self._owns_runtime = owns_runtime
        self._rerankers: dict[str, Any] = {}
        self._rerankers_lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path, inference: InferenceConfig, **options: Any) -> Session:
        # A long-lived UI must not hold the file: the store opens per transaction, so an agent or the CLI can
        # write to it while the TUI is open.
        options.setdefault("shared", True)
        return cls(pcmem.open_sync(path, **options), inference, owns_runtime=True)

    def close(self) -> None:
        if self._owns_runtime:
            self.runtime.close()

    # --- reads ----------------------------------------------------------------------------------------------

    def scopes(self) -> list[ScopeSummary]:
        return sorted(self.runtime.memory.scopes(), key=lambda summary: summary.scope)

    def manifest(self, scope: str, revision: int | None, include_retired: bool) -> Manifest:
        memory = self.runtime.memory.for_scope(scope)
        page = memory.list(ListRequest(revision=revision, state="all" if include_retired else "active"))
        head = memory.head()
        return Manifest(page=page, head=head.revision if head else (page.memory.revision if page.memory else 0))

    def revisions(self, scope: str) -> list[RevisionInfo]:
        return self.runtime.memory.for_scope(scope).revisions()

    def entry(self, scope: str, entry_id: str, revision: int | None) -> EntryDetail:
        memory = self.runtime.memory.for_scope(scope)
        return EntryDetail(entry=memory.get_entry(entry_id, revision), history=memory.history(entry_id))

    # --- search ---------------------------------------------------------------------------------------------

    def policies(self) -> list[str]:
        """Rerank choices: the runtime's own reranker if it has one, else none; the embedding policy; model policies
        with a model."""
        configured = ["configured"] if self.runtime.reranker is not None else ["none"]
        return configured + list(MODEL_FREE_POLICIES) + (list(MODEL_POLICIES) if self.inference.generation_model else [])

    def search(self, form: SearchForm, progress: StageProgress) -> SearchPage:
        request = SearchMemoryRequest(query=form.query, limit=form.limit, mode=form.mode)
        reranker = self._reranker(form.policy, progress)
        progress("searching…", 0, 0)
        return self.runtime.memory.for_scope(form.scope).search(
            request, reranker=reranker, progress=lambda done, total: progress("reranking", done, total)
        )

    def _reranker(self, policy: str, progress: StageProgress) -> Any:
        """``None`` means the runtime's own (none or configured); a model policy loads the model once."""
        if policy not in MODEL_POLICIES and policy not in MODEL_FREE_POLICIES:
            return None
        with self._rerankers_lock:
            if policy not in self._rerankers:
                progress("loading model…", 0, 0)
                self._rerankers[policy] = pcmem.build_reranker(
                    cast(pcmem.RerankPolicy, policy), self.inference, lambda done, total: progress("verifying model", done, total)
                )
            return self._rerankers[policy]

    # --- writes ---------------------------------------------------------------------------------------------

    def remember(self, scope: str, entry: NewEntry, expected_revision: int | None) -> WriteResult:
        request = RememberRequest(entries=(entry,), expected_revision=expected_revision)
        return self.runtime.memory.for_scope(scope).remember(request)

    def retire(self, scope: str, entry_id: str, expected_revision: int) -> WriteResult:
        request = RetireRequest(entry_id=entry_id, expected_revision=expected_revision)
        return self.runtime.memory.for_scope(scope).retire(request)

    def reactivate(self, scope: str, entry_id: str, expected_revision: int) -> WriteResult:
        request = ReactivateRequest(entry_id=entry_id, expected_revision=expected_revision)
        return self.runtime.memory.for_scope(scope).reactivate(request)
