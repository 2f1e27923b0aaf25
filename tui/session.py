"""The TUI's blocking calls on one store, in one place.

Every method here may take seconds (DuckDB, the embedding model, a local LLM), so screens call them only from
thread workers. Nothing here knows about Textual; screens turn results and :class:`pcmem.PcmemError` into messages.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pcmem
from pcmem import (
    MODEL_RERANK_POLICIES,
    Citation,
    EntryHistory,
    EntryNotFoundError,
    InferenceConfig,
    MemoryEntry,
    NewEntry,
    NotFoundError,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    RevisionConflictError,
    RevisionInfo,
    ScopeSummary,
    SearchMemoryRequest,
    SearchPage,
    StageProgress,
    StoreError,
    StoreMissingError,
    SyncRuntime,
    WriteResult,
)
from pcmem_tui import filters
from pcmem_tui.freshness import Freshness
from pcmem_tui.manifests import Manifest, Manifests
from pcmem_tui.recent import RECENT_SCOPES, RecentChange, recent_changes

# StageProgress here: "verifying model" counts bytes, "reranking" counts candidates; total 0 = unknown.
MODEL_POLICIES = MODEL_RERANK_POLICIES
#: Policies that need no generation model (the embedding policy reads the store's own vectors).
MODEL_FREE_POLICIES = ("embedding",)
#: From this many entries a scope read whole shows its first page first: below it the whole read costs about what
#: a page costs (measured: 125 entries 5-7 ms against 6-9 ms for a page of 100; 3,000 entries 70-115 ms against 40),
#: and a first page would only draw the list twice.
FIRST_PAGE_FROM = 1000
#: Seconds a store call of the TUI waits for a file another process holds before it reports "held" (pcmem's default
#: is 10 s): the screen then says who holds it and keeps retrying by itself, instead of freezing on each call.
LOCK_TIMEOUT = 2.0


class Cancelled(Exception):  # noqa: N818 - it is what happened, not an error
    """The user cancelled the work (esc, ctrl+c, leaving the screen). Raised from the progress callbacks a reranker
    calls between candidates, so the model stops computing at the next candidate instead of finishing the pool."""


#: Whether the work that asks has been cancelled (Textual's worker.cancelled_event.is_set).
CancelCheck = Callable[[], bool]


def never_cancelled() -> bool:
    return False


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
    #: Filters, as typed (see :mod:`pcmem_tui.filters`): blank scopes search ``scope`` alone, ``*`` every scope.
    scopes: str = ""
    kinds: str = ""
    where: str = ""
    created_from: str = ""
    created_before: str = ""


class Session:
    """One open store plus the rerankers built on the configured model (each built once, on first use)."""

    def __init__(self, runtime: SyncRuntime | None, inference: InferenceConfig, *, owns_runtime: bool = False,
                 path: Path | None = None, open_options: dict[str, Any] | None = None) -> None:
        self._runtime = runtime
        self.inference = inference
        self._owns_runtime = owns_runtime or runtime is None
        self._rerankers: dict[str, Any] = {}
        self._rerankers_lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._open_options = open_options or {}
        self.path = path
        self.freshness = Freshness()
        self._manifests = Manifests()
        #: The embedding model loading at start-up (described), and why it could not load: for the status bar.
        self.embedder_loading: str | None = None
        self.embedder_failure: str | None = None
        self._warmed: set[str] = set()  # scopes whose search indexes were warmed

    @classmethod
    def open(cls, path: str | Path, inference: InferenceConfig, **options: Any) -> Session:
        """The session on the store at ``path``. A missing store is not created here: a mistyped ``--db`` must not
        leave a new file and folders behind. The session then shows no scopes, and its first write creates it."""
        # Beside an agent or the CLI: whichever process holds the file serves the others (the TUI is then the
        # owner or a client of it; see docs/guides/processes.md).
        options.setdefault("lock_timeout", LOCK_TIMEOUT)
        path = Path(path).expanduser()
        session = cls(None, inference, owns_runtime=True, path=path, open_options=options)
        session._open(create=False)
        return session

    def _open(self, *, create: bool) -> SyncRuntime | None:
        """The runtime, opened on first need; ``None`` while the store does not exist and ``create`` is false."""
        with self._open_lock:
            if self._runtime is None and self.path is not None:
                if self.handed_on:  # a worker still running as the process stops must not take the file back
                    raise StoreError(f"{self.path} was released while the TUI is stopped")
                try:
                    self._runtime = pcmem.open(self.path, **{**self._open_options, "create": create})
                    # A long-lived process: as another process's client, get ready to take the store over (a
                    # hand-off then costs a file open, not a model load); as the owner this does nothing.
                    self._runtime.prepare_takeover()
                except StoreMissingError:
                    if create:
                        raise
        return self._runtime

    @property
    def runtime(self) -> SyncRuntime:
        """The open store (opened now if somebody created it since); StoreMissingError while it does not exist."""
        runtime = self._open(create=False)
        if runtime is None:
            raise StoreMissingError(f"no store at {self.path} yet: the first write creates it")
        return runtime

    @property
    def created(self) -> bool:
        """Whether the store has been opened (no file access: for the event loop)."""
        return self._runtime is not None

    @property
    def exists(self) -> bool:
        return self._open(create=False) is not None

    # --- what the status bar says about the store -------------------------------------------------------------

    def store_role(self) -> str:
        """How this process reaches the store: "owner" (it holds the file and serves other pcmem processes) or
        "client of process N" (another pcmem process holds it and runs every call; see docs/guides/processes.md)."""
        if self.path is None:
            return "in-process"
        runtime = self._runtime
        if runtime is None:
            return "released while stopped" if self.handed_on else "not created yet"
        owner = runtime.owner_pid
        if owner is None:
            return "owner"
        # the pid the runtime was linked to is what it says until its next call relinks it: checked live, so a
        # process killed meanwhile is never named as the owner (the watcher's next look reconnects)
        return f"client of process {owner}" if process_alive(owner) else f"owner process {owner} gone: reconnecting…"

    def owner_gone(self) -> bool:
        """Whether this process is a client of an owner that has died (its next store call reconnects)."""
        runtime = self._runtime
        owner = runtime.owner_pid if runtime is not None else None
        return owner is not None and not process_alive(owner)

    #: Whether the runtime was closed to hand the store on while the process stops (:meth:`resume` lets the next
    #: call open it again).
    handed_on = False

    def resume(self) -> None:
        """The process runs again: the next store call opens the store (as the owner or a client)."""
        self.handed_on = False

    def hand_on(self) -> str:
        """Before the process stops (ctrl+z, SIGTSTP): release the store, so that another process can own it
        meanwhile instead of every agent waiting on a stopped owner. What was done, in words. The next store call
        opens it again, as the owner or a client of whoever took it."""
        if self.path is None or not self._owns_runtime:
            return "the store stays held while stopped: the program that runs the TUI opened it"
        with self._open_lock:
            runtime, self._runtime = self._runtime, None
            self._rerankers.clear()  # built for the runtime that goes
            self.handed_on = True
        if runtime is None:
            return "nothing held while stopped"
        role = "owner" if runtime.owner_pid is None else "client"
        runtime.close()
        return "released the store (another process may own it meanwhile)" if role == "owner" else \
            "disconnected from the store's owner"

    def read_only(self) -> bool:
        """Whether writes will be refused because the file (or, for a new store, its folder) is not writable."""
        if self.path is None:
            return False
        target = self.path if self.path.exists() else next((p for p in self.path.parents if p.exists()), self.path)
        return not os.access(target, os.W_OK)

    # --- the embedding model, loaded at start-up -------------------------------------------------------------

    def embedder_to_load(self) -> str | None:
        """The embedder a search will need, described, when this process runs searches itself (no file access):
        ``None`` without a store yet, without an embedder, or as a client (the owner process runs them)."""
        runtime = self._runtime
        embedder = runtime.embedder if runtime is not None else None
        return None if embedder is None else embedder.profile.describe()

    def warm_embedder(self) -> None:
        """Load the embedding model now (seconds for a real model), so the first search does not pay for it. Raises
        PcmemError (ConfigurationError, EmbeddingError) when the model cannot load: searches then run full-text
        only in auto mode, and an explicit vector search says why."""
        runtime = self._runtime
        if runtime is not None:
            runtime.warm()  # as a client, the owner loads its model: it runs this process's searches

    # --- what a process pays once, paid at start-up -------------------------------------------------------------

    def warm_reads(self) -> None:
        """Pay now, on the smallest scope, what the first read of each kind costs a fresh process: the search
        path's imports (numpy alone took 0.2-0.4 s of the first search) and pydantic's validators for entries and
        hits (built on first use). A full-text search: the embedder has its own warm-up. Raises PcmemError."""
        try:
            self._warm_reads()
        finally:
            self.reads_warm = True

    #: Whether :meth:`warm_reads` has run (whatever came of it).
    reads_warm = False

    def _warm_reads(self) -> None:
        scopes = self.scopes()
        if scopes:
            smallest = min(scopes, key=lambda summary: summary.active_count + summary.retired_count)
            memory = self.runtime.memory.for_scope(smallest.scope)
            memory.search(SearchMemoryRequest(query=_some_words(memory), limit=1, mode="fts"), reranker="none")

    def warms(self, scope: str) -> bool:
        """Whether ``scope``'s search views are still to be warmed (each scope once; as a client, the owner that
        runs this process's searches loads them)."""
        if scope in self._warmed or self._runtime is None:
            return False
        self._warmed.add(scope)
        return True

    def warm_search(self, scope: str) -> None:
        """Load ``scope``'s full-text and vector views (and the model, if not yet) so its first search answers as
        fast as the next (:meth:`pcmem.SyncRuntime.warm`). Raises PcmemError."""
        self.runtime.warm(scopes=[scope])

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
        heads = {summary.scope: summary.head_revision for summary in self.scopes()}
        moved = self._heads is not None and heads != self._heads
        self._heads = heads
        return moved

    def close(self) -> None:
        if self._owns_runtime and self._runtime is not None:
            self._runtime.close()

    # --- reads ----------------------------------------------------------------------------------------------

    def scopes(self) -> list[ScopeSummary]:
        """Every scope; none while the store does not exist yet."""
        if not self.exists:
            return []
        summaries = sorted(self.runtime.memory.scopes(), key=lambda summary: summary.scope)
        self._sizes = {summary.scope: summary.active_count + summary.retired_count for summary in summaries}
        return summaries

    def manifest(self, scope: str, revision: int | None,
                 first_page: Callable[[Manifest], None] | None = None) -> Manifest:
        """One revision's entries, active and retired (see :mod:`pcmem_tui.manifests`: after the first read, only
        the entries changed since are read again; a whole read of a scope last counted at more than
        :data:`FIRST_PAGE_FROM` entries gives ``first_page`` its first page before it reads the rest)."""
        big = self._sizes.get(scope, 0) >= FIRST_PAGE_FROM
        return self._manifests.read(self.runtime.memory.for_scope(scope), revision, first_page if big else None)

    #: Entries per scope when the scopes were last listed (whether a whole read of one is worth a first page).
    _sizes: dict[str, int] = {}

    def revisions(self, scope: str) -> list[RevisionInfo]:
        return self.runtime.memory.for_scope(scope).revisions()

    def recent(self, scopes: list[str] | None = None) -> list[RecentChange]:
        """The newest changes of ``scopes`` (``None``: the scopes changed last), newest first."""
        if scopes is None:
            summaries = sorted(self.scopes(), key=lambda summary: summary.updated_at, reverse=True)
            scopes = [summary.scope for summary in summaries[:RECENT_SCOPES]]
        return recent_changes(self.runtime.memory, scopes)

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
        configured = ["configured"] if self._runtime is not None and self._runtime.reranker is not None else ["none"]
        return configured + list(MODEL_FREE_POLICIES) + (list(MODEL_POLICIES) if self.inference.generation_model else [])

    def search(self, form: SearchForm, progress: StageProgress, cancelled: CancelCheck = never_cancelled) -> SearchPage:
        """The search; ``cancelled`` is checked at every progress step (model verification, each reranked candidate)
        and raises :class:`Cancelled` there, so a cancelled rerank stops the model instead of running to the end."""
        def checked(stage: str) -> Callable[[int, int], None]:
            def report(done: int, total: int) -> None:
                if cancelled():
                    raise Cancelled
                progress(stage, done, total)
            return report

        request = SearchMemoryRequest(
            query=form.query, limit=_number(form.limit), mode=form.mode, kinds=filters.kinds(form.kinds),
            metadata=filters.where(form.where), created_from=form.created_from.strip() or None,
            created_before=form.created_before.strip() or None)
        scopes = filters.scope_names(form.scopes, form.scope, lambda: [s.scope for s in self.scopes()])
        reranker = self._reranker(form.policy, checked)
        checked("waiting for the embedding model…" if self.embedder_loading else "searching…")(0, 0)
        if len(scopes) == 1:
            return self.runtime.memory.for_scope(scopes[0]).search(request, reranker=reranker,
                                                                   progress=checked("reranking"))
        return self.runtime.memory.search(request, scopes=scopes, reranker=reranker, progress=checked("reranking"))

    def _reranker(self, policy: str, checked: Callable[[str], Callable[[int, int], None]]) -> Any:
        """``"default"`` means the runtime's own (none or configured); a model policy loads the model once."""
        if policy not in MODEL_POLICIES and policy not in MODEL_FREE_POLICIES:
            return "default"
        with self._rerankers_lock:
            if policy not in self._rerankers:
                checked("loading model…")(0, 0)
                self._rerankers[policy] = self.runtime.build_reranker(  # a client only names it (the owner runs it)
                    policy, self.inference, checked("verifying model"))
            return self._rerankers[policy]

    # --- writes ---------------------------------------------------------------------------------------------
    # A new entry conflicts with nothing, so it carries no expectation: an agent writing to the scope meanwhile must
    # not make the user's typing fail. A change to an existing entry checks that entry only (per-entry CAS,
    # ``expected_version`` = the version the user was looking at), never the whole scope's head.

    def remember(self, scope: str, entry: NewEntry, *, upsert: bool = False, reason: str | None = None,
                 keep_metadata: bool = False) -> WriteResult:
        """The first write to a store that does not exist yet creates it (and its folder). ``upsert``: an entry with
        this id gets a new version (or is left as it is when nothing differs) instead of an InputError.
        ``keep_metadata`` (an upsert whose metadata field was left blank): an existing entry keeps its metadata."""
        runtime = self._open(create=True)
        assert runtime is not None
        memory = runtime.memory.for_scope(scope)
        if upsert and keep_metadata and entry.entry_id:
            kept = self._upsert_keeping_metadata(memory, entry, reason)
            if isinstance(kept, WriteResult):
                return self._own(scope, kept)
            entry = kept
        return self._own(scope, memory.remember(RememberRequest(entries=(entry,), upsert=upsert, reason=reason)))

    #: Times an upsert that keeps the metadata reads the entry again after another writer changed it meanwhile.
    UPSERT_TRIES = 3

    def _upsert_keeping_metadata(self, memory: Any, entry: NewEntry, reason: str | None) -> WriteResult | NewEntry:
        """An active entry gets its new version as a revise that leaves the metadata alone, checked against the
        version just read (another writer's change in between is read again, never written over); a retired one
        comes back through the upsert, carrying the metadata it had. An unknown id: ``entry`` as it is."""
        assert entry.entry_id is not None
        for _ in range(self.UPSERT_TRIES):
            try:
                current = memory.get_entry(entry.entry_id)
            except NotFoundError:
                return entry
            if current.state != "active":
                return entry.model_copy(update={"metadata": current.entry.metadata})
            try:
                return memory.revise(ReviseRequest(entry_id=current.entry.entry_id, text=entry.text, kind=entry.kind,
                                                   expected_version=current.entry.version, reason=reason))
            except RevisionConflictError:
                continue
        raise RevisionConflictError(f"{entry.entry_id!r} kept changing while it was being written: try again")

    def revise(self, scope: str, entry_id: str, text: str, expected_version: int,
               reason: str | None = None) -> WriteResult:
        request = ReviseRequest(entry_id=entry_id, text=text, expected_version=expected_version, reason=reason)
        return self._own(scope, self.runtime.memory.for_scope(scope).revise(request))

    def retire(self, scope: str, entry_id: str, expected_version: int, reason: str | None = None) -> WriteResult:
        request = RetireRequest(entry_id=entry_id, expected_version=expected_version, reason=reason)
        return self._own(scope, self.runtime.memory.for_scope(scope).retire(request))

    def reactivate(self, scope: str, entry_id: str, expected_version: int, reason: str | None = None) -> WriteResult:
        request = ReactivateRequest(entry_id=entry_id, expected_version=expected_version, reason=reason)
        return self._own(scope, self.runtime.memory.for_scope(scope).reactivate(request))

    #: Seconds a write of this TUI's own is known as such (an outside change marked on the list is not the user's).
    OWN_FOR = 10.0

    def _own(self, scope: str, result: WriteResult) -> WriteResult:
        now = time.monotonic()
        self._own_writes = {key: at for key, at in self._own_writes.items() if now - at < self.OWN_FOR}
        for citation in result.citations:
            self._own_writes[(scope, citation.entry_id)] = now
        return result

    _own_writes: dict[tuple[str, str], float] = {}

    def own_writes(self, scope: str) -> set[str]:
        """The entries of ``scope`` this TUI wrote in the last :attr:`OWN_FOR` seconds."""
        now = time.monotonic()
        return {entry_id for (written_in, entry_id), at in self._own_writes.items()
                if written_in == scope and now - at < self.OWN_FOR}

    def forget(self, scope: str, entry_id: str) -> WriteResult:
        """Erase the entry's every version for good (no compare-and-swap: whatever it holds now goes)."""
        return self.runtime.memory.for_scope(scope).forget(entry_id)

    def forget_scope(self, scope: str) -> WriteResult:
        return self.runtime.memory.forget_scope(scope)

    def current(self, scope: str, entry_id: str) -> MemoryEntry:
        """The entry at the head now (after a conflict: what somebody else made of it)."""
        return self.runtime.memory.for_scope(scope).get_entry(entry_id)


def _some_words(memory: Any) -> str:
    """Words of an entry the scope holds, for a warm-up search (a query that matches nothing returns before the
    full-text index is read), read without ``list``: the entries screen's reads are its own (a test counts them)."""
    changes = memory.changes(0, limit=1).changes
    try:
        return str(memory.get_entry(changes[0].entry_id).entry.text[:64]) if changes else "warm up"
    except NotFoundError:  # forgotten since
        return "warm up"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts: it exists, we may not signal it)."""
    if sys.platform == "win32":
        return True  # os.kill(pid, 0) there sends Ctrl-C to the process group pid: never ask
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _number(text: str | int) -> str | int:
    """A number field's text as an int (pcmem takes integers as such, and checks the range); text that is no
    number goes to pcmem as it is, which refuses it in one line naming the field."""
    try:
        return int(text)
    except ValueError:
        return text
