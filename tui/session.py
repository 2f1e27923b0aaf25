"""The TUI's blocking calls on one store, in one place.

Every method here may take seconds (DuckDB, the embedding model, a local LLM), so screens call them only from
thread workers. Nothing here knows about Textual; screens turn results and :class:`pcmem.PcmemError` into messages.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pcmem
from pcmem import (
    MODEL_RERANK_POLICIES,
    Citation,
    EntryHistory,
    EntryNotFoundError,
    EntryPage,
    InferenceConfig,
    ListRequest,
    MemoryEntry,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
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
    #: entry id → the revision that created it, for sorting in creation order (ties: entry id).
    created: dict[str, int] = field(default_factory=dict)

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
        self.path: Path | None = None

    @classmethod
    def open(cls, path: str | Path, inference: InferenceConfig, **options: Any) -> Session:
        # Beside an agent or the CLI: whichever process holds the file serves the others (the TUI is then the
        # owner or a client of it; see the README's "Concurrency").
        session = cls(pcmem.open_sync(path, **options), inference, owns_runtime=True)
        session.path = Path(path).expanduser()
        return session

    # --- watching for outside writes ---------------------------------------------------------------------------

    _stamp: tuple[float, ...] | None = None
    _heads: dict[str, int] | None = None

    def file_changed(self) -> bool:
        """Whether the store file or its WAL changed since the last look (always true for a store without a path)."""
        path = self.path
        if path is None:
            return True
        stamp: tuple[float, ...] = ()
        for candidate in (path, path.with_name(path.name + ".wal")):
            try:
                info = candidate.stat()
                stamp += (info.st_mtime_ns, info.st_size)
            except OSError:
                stamp += (0, 0)
        changed, self._stamp = stamp != self._stamp, stamp
        return changed

    def heads_moved(self) -> bool:
        """Whether any scope's head revision differs from the last look (one store read)."""
        heads = {summary.scope: summary.head_revision for summary in self.runtime.memory.scopes()}
        moved = self._heads is not None and heads != self._heads
        self._heads = heads
        return moved

    def close(self) -> None:
        if self._owns_runtime:
            self.runtime.close()

    # --- reads ----------------------------------------------------------------------------------------------

    def scopes(self) -> list[ScopeSummary]:
        return sorted(self.runtime.memory.scopes(), key=lambda summary: summary.scope)

    def manifest(self, scope: str, revision: int | None, include_retired: bool) -> Manifest:
        """One revision's entries. In shared mode each store call opens the file, so the head is read separately
        only for a past revision, and the history of changes only when a revised entry hides its creation."""
        memory = self.runtime.memory.for_scope(scope)
        page = memory.list(ListRequest(revision=revision, state="all" if include_retired else "active"))
        shown = page.memory.revision if page.memory else 0
        head = shown
        if revision is not None:
            current = memory.head()
            head = current.revision if current else shown
        created = {e.entry.entry_id: e.entry.created_in_revision for e in page.entries}
        if any(e.entry.version > 1 for e in page.entries) and page.memory is not None:
            for change in memory.changes(0).changes:
                if change.operation == "remember" and change.revision <= shown:
                    created[change.entry_id] = min(created.get(change.entry_id, change.revision), change.revision)
        return Manifest(page=page, head=head, created=created)

    def revisions(self, scope: str) -> list[RevisionInfo]:
        return self.runtime.memory.for_scope(scope).revisions()

    def entry(self, scope: str, entry_id: str, revision: int | None) -> EntryDetail:
        """The entry as of ``revision`` (the head when ``None``) with its history, read in one store call: the
        history holds every version with its state, so the entry at a revision is its last event up to there."""
        history = self.runtime.memory.for_scope(scope).history(entry_id)
        shown = history.memory.revision if revision is None else revision
        events = [event for event in history.events if event.revision <= shown]
        if not events:
            raise EntryNotFoundError(f"entry {entry_id!r} does not exist in revision {shown} of {scope!r}")
        last = events[-1]
        citation = Citation(artifact_id=history.memory.artifact_id, revision=shown, entry_id=entry_id,
                            entry_version_id=last.entry.entry_version_id)
        return EntryDetail(entry=MemoryEntry(citation=citation, state=last.state, entry=last.entry), history=history)

    # --- search ---------------------------------------------------------------------------------------------

    def policies(self) -> list[str]:
        """Rerank choices: the runtime's own reranker if it has one, else none; the embedding policy; model policies
        with a model."""
        configured = ["configured"] if self.runtime.reranker is not None else ["none"]
        return configured + list(MODEL_FREE_POLICIES) + (list(MODEL_POLICIES) if self.inference.generation_model else [])

    def search(self, form: SearchForm, progress: StageProgress) -> SearchPage:
        request = SearchMemoryRequest(query=form.query, limit=_number(form.limit), mode=form.mode)
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
                self._rerankers[policy] = self.runtime.build_reranker(  # a client only names it (the owner runs it)
                    cast(pcmem.RerankPolicy, policy), self.inference, lambda done, total: progress("verifying model", done, total)
                )
            return self._rerankers[policy]

    # --- writes ---------------------------------------------------------------------------------------------
    # A new entry conflicts with nothing, so it carries no expectation: an agent writing to the scope meanwhile must
    # not make the user's typing fail. A change to an existing entry checks that entry only (per-entry CAS,
    # ``expected_version`` = the version the user was looking at), never the whole scope's head.

    def remember(self, scope: str, entry: NewEntry) -> WriteResult:
        return self.runtime.memory.for_scope(scope).remember(RememberRequest(entries=(entry,)))

    def revise(self, scope: str, entry_id: str, text: str, expected_version: int) -> WriteResult:
        request = ReviseRequest(entry_id=entry_id, text=text, expected_version=expected_version)
        return self.runtime.memory.for_scope(scope).revise(request)

    def retire(self, scope: str, entry_id: str, expected_version: int) -> WriteResult:
        request = RetireRequest(entry_id=entry_id, expected_version=expected_version)
        return self.runtime.memory.for_scope(scope).retire(request)

    def reactivate(self, scope: str, entry_id: str, expected_version: int) -> WriteResult:
        request = ReactivateRequest(entry_id=entry_id, expected_version=expected_version)
        return self.runtime.memory.for_scope(scope).reactivate(request)

    def current(self, scope: str, entry_id: str) -> MemoryEntry:
        """The entry at the head now (after a conflict: what somebody else made of it)."""
        return self.runtime.memory.for_scope(scope).get_entry(entry_id)


def _number(text: str | int) -> str | int:
    """A number field's text as an int (pcmem takes integers as such, and checks the range); text that is no
    number goes to pcmem as it is, which refuses it in one line naming the field."""
    try:
        return int(text)
    except ValueError:
        return text
