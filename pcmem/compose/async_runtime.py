"""The async runtime: a :class:`~pcmem.compose.runtime.SyncRuntime` whose blocking calls run in worker threads.

>>> async with pcmem.open_async("/tmp/example.duckdb") as runtime:     # doctest: +SKIP
...     page = await runtime.memory.for_scope("project").search("deploy day")

It adds no behaviour of its own: each method is the sync runtime's, awaited (``tests/api/test_api_parity.py`` holds the
two signatures together), so the sync module has room for what opening a store decides.

This module is light to import: ``pcmem.open_async`` is looked up on the app's event loop, where importing the sync
runtime (pydantic, the store's types) would stall the loop; the first ``await`` imports it in a worker.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine, Generator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from pcmem.compose import options

if TYPE_CHECKING:
    from pcmem.compose.embedders import EmbedderChoice
    from pcmem.compose.runtime import SyncRuntime
    from pcmem.config import InferenceConfig
    from pcmem.decision.port import DecisionModel
    from pcmem.embedding.port import Embedder
    from pcmem.rerank.port import MemoryReranker
    from pcmem.search.reindex import ReindexReport
    from pcmem.types.progress import Progress
    from pcmem.types.rerank import RerankPolicy
    from pcmem.types.search import WarmReport

T = TypeVar("T")
P = ParamSpec("P")


async def to_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(function, *args, **kwargs)


class _Opener:
    """``open_async`` (and ``Runtime.open``): :meth:`SyncRuntime.open <pcmem.compose.runtime.SyncRuntime.open>`'s
    options — its signature, read when asked for (``help()``, ``inspect``): importing the sync runtime on the loop
    is what this module avoids — and an unknown one refused at once; the store opens in a worker thread."""

    def __init__(self, name: str) -> None:
        self.__name__ = self.__qualname__ = name
        self.__doc__ = (f"{name}(path, *, ...): open (creating if needed) the store at ``path`` for async use; the "
                        "options and errors are those of :meth:`pcmem.SyncRuntime.open`. ``await`` it for a "
                        ":class:`Runtime`, or use it with ``async with``. An unknown option raises right away; the "
                        "rest when awaited.")

    @property
    def __signature__(self) -> inspect.Signature:
        from pcmem.compose.runtime import SyncRuntime

        return inspect.signature(SyncRuntime.open).replace(return_annotation="_OpenRuntime")

    def __call__(self, *args: Any, **kwargs: Any) -> _OpenRuntime:
        options.refuse_unknown(self.__name__, kwargs)

        async def opening() -> Runtime:
            def sync_open() -> SyncRuntime:
                from pcmem.compose.runtime import SyncRuntime

                return SyncRuntime.open(*args, **kwargs)

            return Runtime(await to_thread(sync_open))

        return _OpenRuntime(opening)


def _awaitable(sync_open: Callable[P, SyncRuntime]) -> Callable[P, _OpenRuntime]:
    """For type checkers: what ``open_async`` is — ``SyncRuntime.open``'s parameters, an awaitable runtime."""
    raise NotImplementedError


if TYPE_CHECKING:
    from pcmem.compose.runtime import SyncRuntime as _Sync

    open_async = _awaitable(_Sync.open)
else:
    #: ``pcmem.open_async(path, *, ...)``: as ``pcmem.open`` (the same options), for async use.
    open_async = _Opener("open_async")


class Runtime:
    """A store opened for async use: ``runtime.memory.for_scope(scope)`` gives the async Memory API."""

    #: ``await Runtime.open(path, *, ...)``: :func:`open_async` itself.
    open = staticmethod(open_async)

    def __init__(self, sync: SyncRuntime) -> None:
        from pcmem.memory.service import MemoryService  # loaded by now: the worker that opened ``sync`` imported it

        self.sync = sync
        self.memory = MemoryService(sync.memory)

    async def reindex(
        self, progress: Progress | None = None, *, embedder: EmbedderChoice = None
    ) -> ReindexReport:
        """As :meth:`SyncRuntime.reindex`, in a worker thread."""
        return await to_thread(lambda: self.sync.reindex(progress, embedder=embedder))

    async def warm(self, scopes: Sequence[str] = (), *, progress: Progress | None = None,
                   cancel: threading.Event | None = None) -> WarmReport:
        """As :meth:`SyncRuntime.warm`, in a worker thread: the loop keeps running meanwhile. ``progress`` is called
        on the loop (scheduled from the worker). Cancelling the awaiting task stops the worker before its next step
        (the step under way finishes in the background) and raises CancelledError as usual."""
        loop = asyncio.get_running_loop()
        stop = cancel if cancel is not None else threading.Event()
        report = None if progress is None else (
            lambda done, total: loop.call_soon_threadsafe(progress, done, total))
        try:
            return await to_thread(self.sync.warm, scopes, progress=report, cancel=stop)
        except asyncio.CancelledError:
            stop.set()
            raise

    async def reindex_secondary(self, progress: Progress | None = None, *,
                                embedder: EmbedderChoice) -> ReindexReport | None:
        """As :meth:`SyncRuntime.reindex_secondary`, in a worker thread."""
        return await to_thread(lambda: self.sync.reindex_secondary(progress, embedder=embedder))

    async def prepare_takeover(self) -> None:
        """As :meth:`SyncRuntime.prepare_takeover` (it returns at once: the loading runs in a thread of its own)."""
        self.sync.prepare_takeover()

    @property
    def owner_pid(self) -> int | None:
        """As :attr:`SyncRuntime.owner_pid`: the pcmem process that holds the store and serves this runtime, or
        ``None`` when this process holds it."""
        return self.sync.owner_pid

    @property
    def rerank_embedder(self) -> Embedder | None:
        """As :attr:`SyncRuntime.rerank_embedder` (reads no store: the one this runtime holds)."""
        return self.sync.rerank_embedder

    async def use_reranker(self, reranker: MemoryReranker | None) -> None:
        """As :meth:`SyncRuntime.use_reranker`, in a worker thread."""
        await to_thread(self.sync.use_reranker, reranker)

    async def use_write_gate(self, decision_model: DecisionModel | None) -> None:
        """As :meth:`SyncRuntime.use_write_gate`, in a worker thread."""
        await to_thread(self.sync.use_write_gate, decision_model)

    async def build_reranker(self, policy: RerankPolicy, inference: InferenceConfig | None = None,
                             progress: Progress | None = None, *,
                             rerank_embedder: str | None = None) -> MemoryReranker:
        """As :meth:`SyncRuntime.build_reranker`, in a worker thread (it may load a model)."""
        return await to_thread(self.sync.build_reranker, policy, inference, progress, rerank_embedder=rerank_embedder)

    async def close(self) -> None:
        """As :meth:`SyncRuntime.close`."""
        await to_thread(self.sync.close)

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class _OpenRuntime:
    """``await open_async(p)`` or ``async with open_async(p) as runtime``."""

    def __init__(self, opening: Callable[[], Coroutine[Any, Any, Runtime]]) -> None:
        self._opening = opening
        self._runtime: Runtime | None = None

    def __await__(self) -> Generator[Any, None, Runtime]:
        return self._opening().__await__()

    async def __aenter__(self) -> Runtime:
        self._runtime = await self
        return self._runtime

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runtime is not None:
            await self._runtime.close()
