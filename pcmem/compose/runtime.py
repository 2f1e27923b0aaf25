"""The runtime: open a store and hand out the Memory services, wired from settings and injected parts.

>>> import pcmem
>>> with pcmem.open("/tmp/example.duckdb") as runtime:                 # doctest: +SKIP
...     runtime.memory.for_scope("project").remember("We deploy on Fridays.")

The async ``Runtime`` (``pcmem.open_async``) wraps a :class:`SyncRuntime`: see :mod:`pcmem.compose.async_runtime`.

Everything that can be misconfigured (the rerank model, llama.cpp, model files) is checked here, at startup, and
raises ConfigurationError rather than failing at the first search.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pcmem.compose import options
from pcmem.compose.backends import check_target, is_local_file, open_backend
from pcmem.compose.embedders import EmbedderChoice, profile_embedder, resolve_embedder, resolve_rerank_embedder
from pcmem.compose.owned import call_time, open_owned
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.errors import ConfigurationError
from pcmem.memory.parts import Clock, MemoryParts, utc_now
from pcmem.memory.service import SyncMemoryService
from pcmem.memory.vectors import SearchFactory
from pcmem.owner.client import SocketLink
from pcmem.owner.context import CallerSettings
from pcmem.rerank.port import MemoryReranker, SecondEmbedderReranker
from pcmem.search.reindex import ReindexReport, fill_secondary, reindex
from pcmem.search.service import SearchedStore, SearchService
from pcmem.settings import SearchFusion
from pcmem.store.port import StorageBackend
from pcmem.types.progress import Progress
from pcmem.types.rerank import RerankPolicy

if TYPE_CHECKING:
    from pcmem.decision.port import DecisionModel
    from pcmem.memory.write_gate import WriteGate


class SyncRuntime:
    """A store opened for blocking use (scripts, the CLI). Close it, or use it as a context manager."""

    def __init__(
        self,
        backend: StorageBackend,
        *,
        embedder: Embedder | None = None,
        clock: Clock = utc_now,
        config: RuntimeConfig | None = None,
        inference: InferenceConfig | None = None,
        reranker: MemoryReranker | None = None,
        model_progress: Progress | None = None,
        write_gate: DecisionModel | None = None,
        embedder_for: Callable[[EmbeddingProfile], Embedder | None] | None = None,
        rerank_embedder: Embedder | None = None,
        rerank_embedder_for: Callable[[EmbeddingProfile], Embedder | None] | None = None,
    ) -> None:
        self.backend = backend
        self._closed = False
        self._before_close: list[Callable[[], None]] = []
        self.embedder = embedder
        self.config = config or RuntimeConfig()
        self.inference = inference or InferenceConfig()
        if embedder is not None and backend.embedding_profile() is None:
            backend.set_embedding_profile(embedder.profile)  # a new store adopts the configured vector space
        if reranker is not None or self.config.memory_rerank_enabled:
            from pcmem.compose.rerankers import compose_reranker  # llama.cpp code loads only when rerank is wanted

            reranker = compose_reranker(self.config, self.inference, reranker, model_progress)
        self.reranker = reranker
        if rerank_embedder is None and isinstance(reranker, SecondEmbedderReranker):
            rerank_embedder = reranker.second_embedder  # an injected reranker with its own embedder: writes keep its vectors
        search_for = _search_factory(backend, lambda: self.reranker, self.config.memory_rerank_candidate_limit,
                                     self.config.memory_search_fusion)
        parts = MemoryParts(backend, search_for, embedder=embedder, clock=clock,
                            write_gate=_gate(write_gate),
                            embedder_for=embedder_for, rerank_embedder=rerank_embedder,
                            rerank_embedder_for=rerank_embedder_for)
        self.memory = SyncMemoryService(parts)

    @classmethod
    @options.refuse_unknown("open")
    def open(
        cls,
        path: str | Path,
        *,
        embedder: EmbedderChoice = "auto",
        rerank_embedder: EmbedderChoice = "auto",
        clock: Clock = utc_now,
        config: RuntimeConfig | None = None,
        inference: InferenceConfig | None = None,
        reranker: MemoryReranker | None = None,
        model_progress: Progress | None = None,
        write_gate: DecisionModel | None = None,
        shared: bool = False,
        lock_timeout: float = 10.0,
        create: bool = True,
    ) -> SyncRuntime:
        """Open (creating if needed) the store at ``path``.

        ``config``/``inference`` default to the environment (RFC 0080 names, see :mod:`pcmem.settings`); an injected
        ``reranker`` applies even when rerank is disabled there (e.g. a ``DecisionReranker``). ``write_gate``: a
        decision model that checks ``remember`` for duplicates (fail-open; off by default). ``create=False`` raises
        StoreMissingError instead of creating a store. ``rerank_embedder``: the embedding reranker's second embedder
        (``"auto"``: ``$PCMEM_RERANK_EMBEDDER``, else the store's secondary profile; ``"none"``); writes store its
        vectors when it is the store's secondary profile. Every runtime of one path in a process shares one backend
        (see :mod:`pcmem.compose.registry`). A wrongly typed or unknown option is an InputError naming it, raised
        before anything is opened (see :mod:`pcmem.compose.options`).

        Several processes: when another pcmem process holds the DuckDB file, this returns a :class:`ClientRuntime`
        served by it (same API, results and errors; no model is loaded here); otherwise this process opens the file
        and serves it to the others until its last runtime of the file closes (see :mod:`pcmem.compose.owned`). A
        file held by something that does not serve it is retried for up to ``lock_timeout`` seconds, then
        StoreLockedError. ``shared`` is accepted for compatibility and changes nothing: every process takes part.
        """
        options.check_values(path, {
            "embedder": embedder, "rerank_embedder": rerank_embedder, "clock": clock, "config": config,
            "inference": inference, "reranker": reranker, "model_progress": model_progress, "write_gate": write_gate,
            "shared": shared, "lock_timeout": lock_timeout, "create": create,
        })
        check_target(path)
        config = config or RuntimeConfig.from_env()
        inference = inference or InferenceConfig.from_env()
        opened_with: dict[str, Any] = dict(
            embedder=embedder, rerank_embedder=rerank_embedder, clock=clock, config=config, inference=inference,
            reranker=reranker, model_progress=model_progress, write_gate=write_gate, create=create)
        if not is_local_file(path):  # embedded seekdb: one process per data directory; a server serves many (README)
            return cls._open_file(path, shared=shared, lock_timeout=lock_timeout, **opened_with)
        from pcmem.store.duckdb.files import store_path  # no DuckDB import: a client never loads it

        file = store_path(path)  # resolved once: every name of the file finds the one owner

        def opener(timeout: float) -> SyncRuntime:
            return cls._open_file(file, lock_timeout=timeout, **opened_with)

        def client(link: SocketLink) -> SyncRuntime:
            from pcmem.compose.client_runtime import ClientRuntime

            return ClientRuntime(file, link, opener, lock_timeout=lock_timeout, opened_with=opened_with)

        return open_owned(file, opener, client, lock_timeout=lock_timeout)

    @classmethod
    def _open_file(cls, path: str | Path, *, embedder: EmbedderChoice, rerank_embedder: EmbedderChoice, clock: Clock,
                   config: RuntimeConfig, inference: InferenceConfig, reranker: MemoryReranker | None,
                   model_progress: Progress | None, write_gate: DecisionModel | None, shared: bool = False,
                   lock_timeout: float, create: bool) -> SyncRuntime:
        """This process opens the store itself (no owner, no client): :meth:`open`'s last step."""
        backend = open_backend(path, shared=shared, lock_timeout=lock_timeout, create=create)
        try:
            second, second_for = resolve_rerank_embedder(rerank_embedder)
            return cls(backend, embedder=resolve_embedder(embedder, backend), clock=clock, config=config,
                       inference=inference, reranker=reranker, model_progress=model_progress, write_gate=write_gate,
                       embedder_for=profile_embedder if isinstance(embedder, str) else None,
                       rerank_embedder=second, rerank_embedder_for=second_for)
        except BaseException:
            backend.close()
            raise

    def reindex(
        self, progress: Progress | None = None, *, embedder: EmbedderChoice = None
    ) -> ReindexReport:
        """Embed every active entry lacking a vector, with ``embedder`` (switching the store to it) or the runtime's.

        A switch fills the new vectors next to the old ones and changes the store's vector space in one transaction
        at the end; interrupted, it resumes where it stopped. Afterwards this runtime searches with the new embedder.
        Returns a :class:`ReindexReport`. Raises ConfigurationError (no embedder), EmbeddingError, StoreError.
        """
        target = resolve_embedder(embedder, self.backend) if embedder is not None else self.embedder
        if target is None:
            raise ConfigurationError("reindex needs an embedder; this runtime was opened with embedder=None")
        report = reindex(self.backend, target, progress=progress)
        if self.backend.embedding_profile() == target.profile and target is not self.embedder:
            self.embedder = target
            self.memory.parts.use_embedder(target)
        return report

    def reindex_secondary(self, progress: Progress | None = None, *,
                          embedder: EmbedderChoice) -> ReindexReport | None:
        """Keep ``embedder``'s vectors as the store's secondary profile (replacing another one) and embed every active
        entry lacking one; ``"none"`` drops the secondary profile (returns ``None`` then). Resumable. Afterwards this
        runtime's writes keep them filled and its embedding reranker reads them. Raises ConfigurationError,
        EmbeddingError, StoreError (the store's active profile), CapabilityNotSupportedError (seekdb)."""
        if embedder == "none":
            self.backend.set_secondary_embedding_profile(None)
            self.memory.parts.use_rerank_embedder(None)
            return None
        target = resolve_rerank_embedder(embedder)[0]
        if target is None:
            raise ConfigurationError("reindex_secondary needs an embedder: a preset name, a model directory or an "
                                     "Embedder")
        report = fill_secondary(self.backend, target, progress=progress)
        self.memory.parts.use_rerank_embedder(target)
        return report

    @property
    def rerank_embedder(self) -> Embedder | None:
        """The embedding reranker's second embedder this runtime writes and reranks with (under ``"auto"``: found
        from the store's secondary profile on first need), or ``None``."""
        return self.memory.parts.rerank_embedder

    def use_reranker(self, reranker: MemoryReranker | None) -> None:
        """Rerank every later search of this runtime that names no reranker with ``reranker`` (``None``: none); e.g.
        one from :meth:`build_reranker`. Returns and raises nothing."""
        self.reranker = self.memory.parts.search.reranker = reranker  # later search services: see _search_factory

    def use_write_gate(self, decision_model: DecisionModel | None) -> None:
        """Check every later ``remember`` of this runtime with ``decision_model`` (fail-open), or stop (``None``).
        Returns nothing and raises nothing (model failures later become an abstain: the write proceeds)."""
        self.memory.parts.write_gate = _gate(decision_model)

    def build_reranker(self, policy: RerankPolicy, inference: InferenceConfig | None = None,
                       progress: Progress | None = None, *, rerank_embedder: str | None = None) -> MemoryReranker:
        """A reranker of ``policy`` to pass to ``search(reranker=...)`` (as :func:`pcmem.build_reranker`, on this
        runtime's inference settings unless ``inference`` is given). In a :class:`ClientRuntime` it is only named:
        the owning process builds and runs it. Raises ConfigurationError (a model that is not there)."""
        from pcmem.compose.rerankers import build_reranker

        return build_reranker(policy, inference or self.inference, progress, rerank_embedder=rerank_embedder)

    def for_clients(self, caller: CallerSettings | None = None) -> SyncMemoryService:
        """The Memory service this process's owner listener runs another process's calls on, built with that
        process's settings (``caller``: its fusion, candidate limit and embedder choices, see
        :mod:`pcmem.owner.context`): the same backend, no reranker of its own (each call names the one it wants),
        no write gate (a client's runs in the client), and a clock that reads the client's time when a write carries
        one. It holds no share of the backend (the listener stops before the file closes). Raises StoreError (the
        store's profile could not be read), ConfigurationError (an embedder the client named is not prepared here)."""
        caller = caller or CallerSettings()
        profile = self.backend.embedding_profile()
        choice = caller.embedder
        if choice == "auto" and profile is None and caller.new_store_embedder:
            choice = caller.new_store_embedder
        if choice == "auto":  # the store's own model; an unknown one (another app's embedder) serves full text
            embedder = profile_embedder(profile) if profile is not None else resolve_embedder("auto", self.backend)
        else:
            embedder = resolve_embedder(choice, self.backend)
        second, second_for = resolve_rerank_embedder(caller.rerank_embedder, environment=False)
        own_clock = self.memory.parts.clock
        serving = SyncRuntime(
            self.backend, embedder=embedder, embedder_for=profile_embedder if isinstance(choice, str) else None,
            clock=lambda: call_time.get() or own_clock(), inference=self.inference,
            config=RuntimeConfig(
                memory_rerank_candidate_limit=caller.candidate_limit or self.config.memory_rerank_candidate_limit,
                memory_search_fusion=caller.fusion),
            rerank_embedder=second, rerank_embedder_for=second_for)
        return serving.memory

    @property
    def owner_pid(self) -> int | None:
        """The pid of the pcmem process that holds the store file and serves this runtime, or ``None`` when this
        process holds it (it is the owner, or the store is not a DuckDB file)."""
        return None

    def before_close(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when this runtime closes, before its share of the file is released (the owner listener).
        Returns and raises nothing."""
        self._before_close.append(hook)

    def close(self) -> None:
        """Release this runtime's share of the store (the file closes with the last runtime of the path). Idempotent;
        raises nothing. Later calls on the runtime raise StoreError ("the store is closed")."""
        if not self._closed:
            self._closed = True
            for hook in self._before_close:
                hook()
            self.backend.close()

    def __enter__(self) -> SyncRuntime:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()



def _gate(decision_model: DecisionModel | None) -> WriteGate | None:
    """The write gate around ``decision_model``: the decision code loads only when a gate is asked for (a search
    never needs it)."""
    if decision_model is None:
        return None
    from pcmem.memory.write_gate import WriteGate

    return WriteGate(decision_model)


def _search_factory(backend: SearchedStore, reranker: Callable[[], MemoryReranker | None],
                    candidate_limit: int, fusion: SearchFusion | None) -> SearchFactory:
    """How the runtime's Memory builds its search service for an embedder (again after a vector-space switch), with
    the runtime's reranker at that moment and its fusion (``None``: the store's default, else the contract's)."""
    def search_for(embedder: Embedder | None, rerank_embedder: Callable[[], Embedder | None]) -> SearchService:
        return SearchService(backend, embedder, reranker(), candidate_limit, rerank_embedder=rerank_embedder,
                             fusion=fusion)
    return search_for


#: ``pcmem.open(path, *, ...)``: open (creating if needed) the store at ``path`` for blocking use — a
#: :class:`SyncRuntime` (a context manager). It is :meth:`SyncRuntime.open` itself: the options and errors are its.
open = SyncRuntime.open  # as gzip.open and shelve.open: the module's way in, not the builtin

#: The name before ``open`` (the same object), kept as an alias for one release; ``open_runtime`` (before
#: ``open_async``) is in :mod:`pcmem.compose.async_runtime`.
open_sync = open
