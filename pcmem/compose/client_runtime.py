"""A runtime whose store another pcmem process holds: the same API, served by that process's owner (#28), and every
option it was opened with either honoured or refused when it is opened (#39, item 4):

- carried with each call to the owner (:mod:`pcmem.owner.context`): ``config`` (fusion, candidate limit),
  ``embedder`` and ``rerank_embedder`` by name (``None``/``"none"``, ``"auto"``, a preset, a model directory, a
  preset's Embedder object), ``clock`` (its reading, with each write), ``inference`` (with each reranker named);
- run here, on what the owner returns (:mod:`pcmem.owner.in_client`): a ``reranker`` object and a ``write_gate``;
- refused with a one-line ConfigurationError: an Embedder object of no preset (it embeds only in this process),
  a reranker that reads the store's vectors and cannot be named (only the owning process reads them);
- nothing to do here: ``model_progress`` (a client loads no model), ``create`` (the store exists), ``shared``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcmem import settings
from pcmem.compose.embedders import EmbedderChoice, sent_by_name
from pcmem.compose.owned import ServedSettings, owner_or_file, serve
from pcmem.compose.runtime import SyncRuntime, _gate
from pcmem.config import InferenceConfig, RuntimeConfig
from pcmem.embedding.port import Embedder
from pcmem.errors import ConfigurationError, StoreLockedError
from pcmem.memory.parts import utc_now
from pcmem.owner.client import Caller, ClientMemoryService, Link, LocalLink, SocketLink
from pcmem.owner.context import CallerSettings
from pcmem.owner.in_client import LocalParts
from pcmem.owner.operations import WRITES
from pcmem.owner.rerank_spec import RerankChoice, RerankSpec
from pcmem.rerank.port import MemoryReranker, StoreBoundReranker
from pcmem.search.reindex import ReindexReport
from pcmem.store.port import StorageBackend
from pcmem.types.progress import Progress
from pcmem.types.rerank import RerankPolicy

if TYPE_CHECKING:
    from pcmem.decision.port import DecisionModel


class ClientRuntime(SyncRuntime):
    """A store file another pcmem process holds, used through it: ``memory`` and its scopes have the methods, results
    and errors of a :class:`SyncRuntime`'s (see :mod:`pcmem.owner.client`); nothing here loads a model unless the
    app gave this runtime one of its own (a reranker, a write gate's decision model), which runs here.

    When the owner goes away, the next call takes the file over (this process becomes the owner: it opens the file
    with the options it was opened with and serves the others) or connects to whichever process did. Maintenance
    that needs the file itself (``backend``, ``reindex``) raises StoreLockedError while another process owns it.
    """

    def __init__(self, path: Path, link: SocketLink, opener: Callable[[float], SyncRuntime], *, lock_timeout: float,
                 opened_with: dict[str, Any]) -> None:
        self.path = path
        self._opener, self._lock_timeout = opener, lock_timeout
        self._closed = False
        self._before_close = []
        self._held: SyncRuntime | None = None
        self._owner_pid = link.owner_pid
        self.config: RuntimeConfig = opened_with["config"]
        self.inference: InferenceConfig = opened_with["inference"]
        self.embedder = None
        try:
            self._settings = CallerSettings(
                fusion=self.config.memory_search_fusion, candidate_limit=self.config.memory_rerank_candidate_limit,
                embedder=sent_by_name(opened_with["embedder"], "embedder"),
                rerank_embedder=self._rerank_embedder_named(opened_with["rerank_embedder"]),
                new_store_embedder=settings.new_store_embedder("") or None)
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
        found = owner_or_file(self.path, self._opener, self._lock_timeout)
        if isinstance(found, SocketLink):
            self._owner_pid = found.owner_pid
            return self._framed(found)
        self._held = serve(found)
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
        """As :meth:`SyncRuntime.use_write_gate`: the gate's model runs in this process (see the module docstring)."""
        self._local.gate = _gate(decision_model)

    def _file(self) -> SyncRuntime:
        if self._held is None:
            raise StoreLockedError(f"{self.path} is held by pcmem process {self._owner_pid}, which serves it to "
                                   "this process; this needs the file itself: run it when that process has exited")
        return self._held

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._caller.close()
            if self._held is not None:
                self._held.close()

