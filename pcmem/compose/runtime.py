"""The runtime: open a store and hand out the Memory services, wired from settings and injected parts.

>>> import pcmem
>>> with pcmem.open("/tmp/example.duckdb") as runtime:                 # doctest: +SKIP
...     runtime.memory.for_scope("project").remember("We deploy on Fridays.")

The async ``Runtime`` (``pcmem.open_async``) wraps a :class:`SyncRuntime`: see :mod:`pcmem.compose.async_runtime`.

Everything that can be misconfigured (the rerank model, llama.cpp, model files) is checked here, at startup, and
raises ConfigurationError rather than failing at the first search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pcmem import settings
from pcmem.compose import options, standby
from pcmem.compose.backends import open_backend
from pcmem.compose.embedders import (
    EmbedderChoice,
    profile_embedder,
    resolve_embedder,
    resolve_rerank_embedder,
    sent_by_name,
)
from pcmem.compose.owned import ServedSettings, call_time, file_of, open_owned, reach_owner_or_open, serve_to_others
from pcmem.compose.runtime_parts import search_factory, write_gate_for
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.errors import ConfigurationError, StoreLockedError
from pcmem.memory.parts import Clock, RuntimeShared, utc_now
from pcmem.memory.service import SyncMemoryService
from pcmem.owner.client import Caller, ClientMemoryService, Link, LocalLink, SocketLink
from pcmem.owner.context import CallerSettings
from pcmem.owner.in_client import LocalParts
from pcmem.owner.operations import WRITES
from pcmem.owner.rerank_spec import RerankChoice, RerankSpec
from pcmem.rerank.port import MemoryReranker, SecondEmbedderReranker, StoreBoundReranker
from pcmem.search.reindex import ReindexReport, fill_secondary, reindex
from pcmem.store import engines
from pcmem.store.engine import StorageEngine, StoreLocation
from pcmem.store.port import StorageBackend
from pcmem.types.progress import Progress
from pcmem.types.rerank import RerankPolicy
from pcmem.types.search import WarmReport

if TYPE_CHECKING:
    from pcmem.decision.port import DecisionModel


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
        search_for = search_factory(backend, lambda: self.reranker, self.config.memory_rerank_candidate_limit,
                                     self.config.memory_search_fusion)
        parts = RuntimeShared(backend, search_for, embedder=embedder, clock=clock,
                            write_gate=write_gate_for(write_gate),
                            embedder_for=embedder_for, rerank_embedder=rerank_embedder,
                            rerank_embedder_for=rerank_embedder_for)
        self.memory = SyncMemoryService(parts)

    @classmethod
    @options.checked
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
        lock_timeout: float = 10.0,
        create: bool = True,
    ) -> SyncRuntime:
        """Open (creating if needed) the store at ``path``: a file path (a DuckDB file), or a store URL whose scheme
        names its engine (``seekdb://...``, see :mod:`pcmem.store.engines`).

        ``config``/``inference`` default to the environment (PowerContext's variable names, see :mod:`pcmem.settings`);
        an injected ``reranker`` applies even when rerank is disabled there (e.g. a ``DecisionReranker``).
        ``write_gate``: a decision model that checks ``remember`` for duplicates (fail-open; off by default).
        ``create=False`` raises StoreMissingError instead of creating a store. ``rerank_embedder``: the embedding
        reranker's second embedder (``"auto"``: ``$PCMEM_RERANK_EMBEDDER``, else the store's secondary profile;
        ``"none"``); writes store its vectors when it is the store's secondary profile. Every runtime of one path in a
        process shares one backend (see :mod:`pcmem.store.held`). A wrongly typed or unknown option is an InputError
        naming it, raised before anything is opened (see :mod:`pcmem.compose.options`).

        Several processes: when another pcmem process holds the DuckDB file, this returns a :class:`ClientRuntime`
        served by it (same API, results and errors; no model is loaded here); otherwise this process opens the file
        and serves it to the others until its last runtime of the file closes (see :mod:`pcmem.compose.owned`). A
        file held by something that does not serve it is retried for up to ``lock_timeout`` seconds, then
        StoreLockedError.
        """
        opened_with = options.given(locals())  # every option, by name (checked by @options.checked)
        opened_with.update(config=config or RuntimeConfig.from_env(), inference=inference or InferenceConfig.from_env())
        location = engines.locate(path)  # resolved once: every name of a file finds the one owner
        engine = engines.engine_for(location)
        if not engine.single_file:  # a database its engine serves to every process (embedded seekdb: one process)
            return cls._open_file(location, opened_with)

        def opener(timeout: float) -> SyncRuntime:
            return cls._open_file(location, {**opened_with, "lock_timeout": timeout})

        def client(link: SocketLink) -> SyncRuntime:
            return ClientRuntime(engine, location, link, opener, lock_timeout=lock_timeout, opened_with=opened_with)

        return open_owned(engine, location, opener, client, lock_timeout=lock_timeout)

    @classmethod
    def _open_file(cls, location: StoreLocation, opened_with: dict[str, Any]) -> SyncRuntime:
        """This process opens the store itself (no owner, no client): :meth:`open`'s last step, with its options."""
        given = dict(opened_with)
        backend = open_backend(location, lock_timeout=given.pop("lock_timeout"), create=given.pop("create"))
        try:
            embedder = given.pop("embedder")
            second, second_for = resolve_rerank_embedder(given.pop("rerank_embedder"))
            return cls(backend, embedder=resolve_embedder(embedder, backend), **given,
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

    def warm(self, scopes: Sequence[str] = (), *, progress: Progress | None = None,
             cancel: threading.Event | None = None) -> WarmReport:
        """Load now what the first searches of ``scopes`` would load: the embedding model (one query embedding) and
        each scope's search views, so that the user's first search answers as fast as the next.

        Steps: the model, then each scope; ``progress(done, total)`` is called before the first and after each (in
        the calling thread); ``cancel`` (set from any thread) stops it before the next step, and the report says
        ``cancelled``. In a client of another process, the owner loads its model and views (they serve this
        process's searches) and nothing loads here. Returns a :class:`WarmReport`; raises InputError (a scope name),
        EmbeddingError or ConfigurationError (the model cannot load), StoreError."""
        from pcmem.compose.warm import warm

        return warm(self.memory, scopes, progress, cancel)

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
        self.reranker = self.memory.parts.search.reranker = reranker  # later search services: see runtime_parts.search_factory

    def use_write_gate(self, decision_model: DecisionModel | None) -> None:
        """Check every later ``remember`` of this runtime with ``decision_model`` (fail-open), or stop (``None``).
        Returns nothing and raises nothing (model failures later become an abstain: the write proceeds)."""
        self.memory.parts.write_gate = write_gate_for(decision_model)

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
        if choice is None or profile is None:  # a client never picks the vector space of a store that has none yet
            embedder = None
        elif choice == "auto":  # the store's own model; an unknown one (another app's embedder) serves full text
            embedder = profile_embedder(profile)
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

    def prepare_takeover(self) -> None:
        """In a client of another process's owner: load in the background what taking the store over needs (see
        :meth:`pcmem.compose.client_runtime.ClientRuntime.prepare_takeover`), for a long-lived process (a server, a
        desktop app) whose hand-off should not wait for a model. Here, in the owner, nothing to do. Returns at
        once; raises nothing."""

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



class ClientRuntime(SyncRuntime):
    """A store file another pcmem process holds, used through it: ``memory`` and its scopes have the methods, results
    and errors of a :class:`SyncRuntime`'s (see :mod:`pcmem.owner.client`); nothing here loads a model unless the
    app gave this runtime one of its own (a reranker, a write gate's decision model), which runs here.

    Every option it was opened with is honoured or refused at open:

    - carried with each call to the owner (:mod:`pcmem.owner.context`): ``config`` (fusion, candidate limit),
      ``embedder`` and ``rerank_embedder`` by name (``None``/``"none"``, ``"auto"``, a preset, a model directory, a
      preset's Embedder object), ``clock`` (its reading, with each write), ``inference`` (with each reranker named);
    - run here, on what the owner returns (:mod:`pcmem.owner.in_client`): a ``reranker`` object, a ``write_gate``;
    - refused with a one-line ConfigurationError: an Embedder object of no preset (it embeds only in this process),
      a reranker that reads the store's vectors and cannot be named (only the owning process reads them);
    - nothing to do here: ``model_progress`` (a client loads no model), ``create`` (the store exists).

    When the owner goes away, the next call takes the file over (this process becomes the owner: it opens the file
    with the options it was opened with and serves the others) or connects to whichever process did. Maintenance
    that needs the file itself (``backend``, ``reindex``) raises StoreLockedError while another process owns it.
    """

    def __init__(self, engine: StorageEngine, location: StoreLocation, link: SocketLink,
                 opener: Callable[[float], SyncRuntime], *, lock_timeout: float, opened_with: dict[str, Any]) -> None:
        self.path = file_of(location)
        self._engine, self._location = engine, location
        self._opener, self._lock_timeout = opener, lock_timeout
        self._closed = False
        self._before_close = []
        self._held: SyncRuntime | None = None
        self._owner_pid = link.owner_pid
        self._guard = threading.Lock()
        self._preparing = False
        self._closing = threading.Event()
        self.config: RuntimeConfig = opened_with["config"]
        self.inference: InferenceConfig = opened_with["inference"]
        self.embedder = None
        try:
            self._settings = CallerSettings(
                fusion=self.config.memory_search_fusion, candidate_limit=self.config.memory_rerank_candidate_limit,
                embedder=sent_by_name(opened_with["embedder"], "embedder"),
                rerank_embedder=self._rerank_embedder_named(opened_with["rerank_embedder"]))
            reranker = opened_with["reranker"]
            if reranker is None and self.config.memory_rerank_enabled:
                reranker = RerankChoice(RerankSpec(policy="listwise", inference=self.inference.model_dump(mode="json")))
            self.reranker = self._runnable(reranker)
        except BaseException:
            link.close()
            raise
        self._clock = opened_with["clock"]
        self._local = LocalParts(self._named)
        self._caller = Caller(self._framed(link), self._relink, self.reranker)
        self.memory = ClientMemoryService(self._caller, self._local)  # type: ignore[assignment]  # the same methods
        self.use_write_gate(opened_with["write_gate"])
        if self._settings != CallerSettings(candidate_limit=self._settings.candidate_limit):
            self._check_settings()

    def _rerank_embedder_named(self, choice: EmbedderChoice) -> str:
        named = sent_by_name(choice, "rerank_embedder")
        if named is None or named == "none":
            return "none"
        return (settings.rerank_embedder() or "auto") if named == "auto" else named  # this process's variable

    def _check_settings(self) -> None:
        """Let the owner build this runtime's settings now (an embedder not prepared there, an unknown fusion), so a
        refusal comes at open, as it would in one process."""
        try:
            self.memory.search_fusion()
        except BaseException:
            self.close()
            raise

    def _framed(self, link: Link) -> Link:
        """``link`` adding this runtime's settings to each request, and its clock's reading to each write."""
        custom_clock = self._clock is not utc_now
        context = self._settings.as_json()

        def frame(request: dict[str, Any]) -> dict[str, Any]:
            if custom_clock and str(request.get("op")).partition(".")[2] in WRITES:
                return {**request, "context": {**context, "now": self._clock().isoformat()}}
            return {**request, "context": context}

        link.frame = frame  # type: ignore[attr-defined]  # SocketLink and LocalLink both take one
        return link

    def _runnable(self, reranker: MemoryReranker | None) -> MemoryReranker | None:
        """A reranker this runtime can use: named for the owner when it reads the store's vectors, else as it is
        (an object of this process runs here: :mod:`pcmem.owner.in_client`)."""
        return self._named(reranker) if isinstance(reranker, StoreBoundReranker) else reranker

    def _named(self, reranker: MemoryReranker) -> MemoryReranker:
        """pcmem's embedding reranker, named for the owner to build and run; any other reranker that reads the
        store's vectors cannot run in a client: ConfigurationError."""
        from pcmem.rerank.embedding import POLICY_ID, EmbeddingReranker

        if isinstance(reranker, EmbeddingReranker) and reranker.policy_id == POLICY_ID:
            second = reranker.second_embedder
            return RerankChoice(RerankSpec(policy="embedding", inference=self.inference.model_dump(mode="json"),
                                           rerank_embedder=None if second is None else sent_by_name(second, "reranker")))
        raise ConfigurationError(
            f"the reranker {reranker.policy_id} reads the store's vectors, which only the process that holds the store "
            f"(pid {self._owner_pid}) can read: name it with runtime.build_reranker(policy) instead")

    def prepare_takeover(self) -> None:
        """Load, in a background thread, what this process needs to take the store over if its owner goes away: the
        storage engine and the store's embedding model (see :mod:`pcmem.compose.standby`). A hand-off then costs a
        file open, not a model load; a client loads neither until then (a one-shot command never should). Returns at
        once; raises nothing (what fails to load now loads at the take-over, as before)."""
        with self._guard:
            if self._preparing:
                return
            self._preparing = True
        standby.start(self._closing, self._engine.preload, getattr(self._caller.link, "profile", None),
                      self._settings.embedder)

    @property
    def owner_pid(self) -> int | None:
        """The pid of the process that owns the store (``None`` once this process took it over)."""
        return None if self._held is not None else self._owner_pid

    @property
    def backend(self) -> StorageBackend:  # type: ignore[override]  # read-only: a client has no backend of its own
        if self._held is not None:
            return self._held.backend
        raise StoreLockedError(f"{self.path} is held by pcmem process {self._owner_pid}, which serves it to this "
                               "process; this needs the file itself: run it when that process has exited")

    def _relink(self) -> Link:
        """The owner went away: take the file over, or connect to whoever did (StoreLockedError after
        ``lock_timeout`` seconds of neither). Either way the calls run as before: with this runtime's settings, its
        reranker and write gate here."""
        found = reach_owner_or_open(self._engine, self._location, self._opener, self._lock_timeout)
        if isinstance(found, SocketLink):
            self._owner_pid = found.owner_pid
            return self._framed(found)
        self._held = serve_to_others(found, self.path)
        self.embedder = found.embedder
        return self._framed(LocalLink(ServedSettings(found.for_clients), lambda: None))

    def build_reranker(self, policy: RerankPolicy, inference: InferenceConfig | None = None,
                       progress: Progress | None = None, *, rerank_embedder: str | None = None) -> MemoryReranker:
        """The reranker named for the owner to build and run (a model is not loaded here)."""
        spec = RerankSpec(policy=policy, inference=(inference or self.inference).model_dump(mode="json"),
                          rerank_embedder=rerank_embedder)
        return RerankChoice(spec)  # crosses the socket by name

    def reindex(self, progress: Progress | None = None, *, embedder: EmbedderChoice = None) -> ReindexReport:
        return self._file().reindex(progress, embedder=embedder)

    def reindex_secondary(self, progress: Progress | None = None, *,
                          embedder: EmbedderChoice) -> ReindexReport | None:
        return self._file().reindex_secondary(progress, embedder=embedder)

    @property
    def rerank_embedder(self) -> Embedder | None:
        return self._held.rerank_embedder if self._held is not None else None

    def use_reranker(self, reranker: MemoryReranker | None) -> None:
        self.reranker = self._caller.default_rerank = self._runnable(reranker)

    def use_write_gate(self, decision_model: DecisionModel | None) -> None:
        """As :meth:`SyncRuntime.use_write_gate`: the gate's model runs in this process (see the class docstring)."""
        self._local.gate = write_gate_for(decision_model)

    def _file(self) -> SyncRuntime:
        if self._held is None:
            raise StoreLockedError(f"{self.path} is held by pcmem process {self._owner_pid}, which serves it to "
                                   "this process; this needs the file itself: run it when that process has exited")
        return self._held

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._closing.set()
            self._caller.close()
            if self._held is not None:
                self._held.close()


#: ``pcmem.open(path, *, ...)``: open (creating if needed) the store at ``path`` for blocking use — a
#: :class:`SyncRuntime` (a context manager). It is :meth:`SyncRuntime.open` itself: the options and errors are its.
open = SyncRuntime.open  # as gzip.open and shelve.open: the module's way in, not the builtin
