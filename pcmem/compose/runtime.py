"""The runtime: open a store and hand out the Memory services, wired from settings and injected parts.

>>> import pcmem
>>> with pcmem.open_sync("/tmp/example.duckdb") as runtime:            # doctest: +SKIP
...     runtime.memory.for_scope("project").remember("We deploy on Fridays.")

>>> async with pcmem.open_runtime("/tmp/example.duckdb") as runtime:   # doctest: +SKIP
...     page = await runtime.memory.for_scope("project").search("deploy day")

Everything that can be misconfigured (the rerank model, llama.cpp, model files) is checked here, at startup, and
raises ConfigurationError rather than failing at the first search.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from pcmem.compose import options
from pcmem.compose.backends import open_backend
from pcmem.compose.embedders import EmbedderChoice, profile_embedder, resolve_embedder, resolve_rerank_embedder
from pcmem.decision.port import DecisionModel
from pcmem.embedding.port import Embedder, EmbeddingProfile
from pcmem.errors import ConfigurationError
from pcmem.memory.scoped import Clock, MemoryParts, utc_now
from pcmem.memory.service import MemoryService, SyncMemoryService, to_thread
from pcmem.memory.write_gate import WriteGate
from pcmem.rerank.port import MemoryReranker
from pcmem.search.reindex import ReindexReport, fill_secondary, reindex
from pcmem.settings import InferenceConfig, RuntimeConfig
from pcmem.store.port import StorageBackend
from pcmem.types.progress import Progress


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
        self.embedder = embedder
        self.config = config or RuntimeConfig()
        self.inference = inference or InferenceConfig()
        if embedder is not None and backend.embedding_profile() is None:
            backend.set_embedding_profile(embedder.profile)  # a new store adopts the configured vector space
        if reranker is not None or self.config.memory_rerank_enabled:
            from pcmem.compose.rerankers import compose_reranker  # llama.cpp code loads only when rerank is wanted

            reranker = compose_reranker(self.config, self.inference, reranker, model_progress)
        self.reranker = reranker
        if rerank_embedder is None:  # an injected embedding reranker with its own embedder: writes keep its vectors
            rerank_embedder = getattr(reranker, "embedder", None) if getattr(reranker, "second_embedder", False) \
                else None
        parts = MemoryParts(backend=backend, embedder=embedder, clock=clock, reranker=reranker,
                            candidate_limit=self.config.memory_rerank_candidate_limit,
                            fusion=self.config.memory_search_fusion,
                            write_gate=WriteGate(write_gate) if write_gate is not None else None,
                            embedder_for=embedder_for, rerank_embedder=rerank_embedder,
                            rerank_embedder_for=rerank_embedder_for)
        self.memory = SyncMemoryService(parts)

    @classmethod
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
        decision model that checks ``remember`` for duplicates (fail-open; off by default). ``shared=True`` opens the
        file per transaction so other processes can use the store too (the TUI does this); a busy file is retried
        for up to ``lock_timeout`` seconds. ``create=False`` raises StoreMissingError instead of creating a store.
        ``rerank_embedder``: the embedding reranker's second embedder (``"auto"``: ``$PCMEM_RERANK_EMBEDDER``, else
        the store's secondary profile; ``"none"``); writes store its vectors when it is the store's secondary profile.
        Every runtime of one path in a process shares one backend (see :mod:`pcmem.compose.registry`). A wrongly
        typed option is an InputError naming it, raised before anything is opened (see :mod:`pcmem.compose.options`).
        """
        options.check_values(path, {
            "embedder": embedder, "rerank_embedder": rerank_embedder, "clock": clock, "config": config,
            "inference": inference, "reranker": reranker, "model_progress": model_progress, "write_gate": write_gate,
            "shared": shared, "lock_timeout": lock_timeout, "create": create,
        })
        config = config or RuntimeConfig.from_env()
        inference = inference or InferenceConfig.from_env()
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

    def use_write_gate(self, decision_model: DecisionModel | None) -> None:
        """Check every later ``remember`` of this runtime with ``decision_model`` (fail-open), or stop (``None``).
        Returns nothing and raises nothing (model failures later become an abstain: the write proceeds)."""
        self.memory.parts.write_gate = WriteGate(decision_model) if decision_model is not None else None

    def close(self) -> None:
        """Release this runtime's share of the store (the file closes with the last runtime of the path). Idempotent;
        raises nothing. Later calls on the runtime raise StoreError ("the store is closed")."""
        if not self._closed:
            self._closed = True
            self.backend.close()

    def __enter__(self) -> SyncRuntime:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Runtime:
    """A store opened for async use: ``runtime.memory.for_scope(scope)`` gives the async Memory API."""

    def __init__(self, sync: SyncRuntime) -> None:
        self.sync = sync
        self.memory = MemoryService(sync.memory)

    @classmethod
    async def open(cls, path: str | Path, **kwargs: Any) -> Runtime:
        """Same options as :meth:`SyncRuntime.open`; opening runs in a worker thread."""
        options.check_names("Runtime.open", kwargs)
        return cls(await to_thread(lambda: SyncRuntime.open(path, **kwargs)))

    async def reindex(
        self, progress: Progress | None = None, *, embedder: EmbedderChoice = None
    ) -> ReindexReport:
        """As :meth:`SyncRuntime.reindex`, in a worker thread."""
        return await to_thread(lambda: self.sync.reindex(progress, embedder=embedder))

    async def reindex_secondary(self, progress: Progress | None = None, *,
                                embedder: EmbedderChoice) -> ReindexReport | None:
        """As :meth:`SyncRuntime.reindex_secondary`, in a worker thread."""
        return await to_thread(lambda: self.sync.reindex_secondary(progress, embedder=embedder))

    async def close(self) -> None:
        """As :meth:`SyncRuntime.close`."""
        await to_thread(self.sync.close)

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def open_sync(path: str | Path, **kwargs: Any) -> SyncRuntime:
    """Open (creating if needed) the store file at ``path`` for blocking use; options as :meth:`SyncRuntime.open`.

    Returns a :class:`SyncRuntime` (a context manager). Raises StoreError and its subclasses (locked, permission,
    read-only, missing, damaged WAL, foreign or newer file), ConfigurationError, EmbeddingError, InputError (an
    unknown or wrongly typed option too)."""
    options.check_names("open_sync", kwargs)
    return SyncRuntime.open(path, **kwargs)


class _OpenRuntime:
    """``await open_runtime(p)`` or ``async with open_runtime(p) as runtime``."""

    def __init__(self, path: str | Path, options: dict[str, Any]) -> None:
        self._path, self._options = path, options
        self._runtime: Runtime | None = None

    def __await__(self):  # noqa: ANN204 - generator protocol
        return Runtime.open(self._path, **self._options).__await__()

    async def __aenter__(self) -> Runtime:
        self._runtime = await self
        return self._runtime

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runtime is not None:
            await self._runtime.close()


def open_runtime(path: str | Path, **kwargs: Any) -> _OpenRuntime:
    """Open (creating if needed) the store file at ``path`` for async use; options as :meth:`SyncRuntime.open`.

    ``await`` it for a :class:`Runtime`, or use it with ``async with``. Raises as :func:`open_sync`; an unknown option
    right away."""
    options.check_names("open_runtime", kwargs)
    return _OpenRuntime(path, kwargs)
