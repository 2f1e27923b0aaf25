"""Who serves a single-file store (a DuckDB file): this process (its owner) or the process that holds it already
(this one is then its client). See :mod:`pcmem.owner` for the socket, the protocol and the client objects.

Opening a store file: if this process holds it already, use that. Else ask the owner's socket first (a client
never imports the storage engine or loads a model); nobody answers → open the file: the engine's lock on it decides
who becomes the owner, and the owner starts listening at once. A file that is locked while no socket answers yet (its owner is
starting up) is retried, socket then file, for up to ``lock_timeout`` seconds. The same loop runs when a client
finds its owner gone (:class:`pcmem.compose.runtime.ClientRuntime`): it takes the file over, or connects to whoever did.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pcmem.config import InferenceConfig
from pcmem.errors import StoreLockedError, UnsafeRuntimeFolderError
from pcmem.lru import LRU
from pcmem.owner import address, dial
from pcmem.owner.client import SocketLink
from pcmem.owner.context import CallerSettings
from pcmem.owner.context import call_time as read_call_time
from pcmem.owner.operations import Dispatcher
from pcmem.owner.protocol import encode_error
from pcmem.owner.rerank_spec import CANDIDATES, RerankSpec
from pcmem.owner.transport import current
from pcmem.store.engine import StorageEngine, StoreLocation, holder_of

if TYPE_CHECKING:
    from pcmem.memory.service import SyncMemoryService
    from pcmem.owner.server import OwnerServer
    from pcmem.rerank.port import MemoryReranker
    from pcmem.types.rerank import MemoryRerankDecision

log = logging.getLogger(__name__)

class OwnedRuntime(Protocol):
    """What :func:`serve` needs of a runtime (:class:`pcmem.compose.runtime.SyncRuntime`)."""

    backend: Any

    def before_close(self, hook: Callable[[], None]) -> None: ...

    def for_clients(self, caller: CallerSettings) -> SyncMemoryService: ...


R = TypeVar("R", bound=OwnedRuntime)


def open_owned(engine: StorageEngine, location: StoreLocation, opener: Callable[[float], R],
               make_client: Callable[[SocketLink], R], *, lock_timeout: float) -> R:
    """The single-file store at ``location``: this process's own runtime (serving others from now on), or a client
    of its owner."""
    if engine.held_here(location):
        return serve_to_others(opener(lock_timeout), file_of(location))
    found = reach_owner_or_open(engine, location, opener, lock_timeout)
    return make_client(found) if isinstance(found, SocketLink) else serve_to_others(found, file_of(location))


def reach_owner_or_open(engine: StorageEngine, location: StoreLocation, opener: Callable[[float], R],
                  lock_timeout: float) -> SocketLink | R:
    """A link to the file's owner, or the file opened by this process (which is then its owner). While another
    process holds the file without answering yet, this waits for it (:func:`pcmem.owner.dial.owner_or_free`): up to
    ``lock_timeout`` seconds, or not at all when it is stopped (OwnerStoppedError) or an older pcmem
    (StoreLockedError)."""
    path, holder = file_of(location), holder_of(engine, location)
    deadline = time.monotonic() + lock_timeout
    identity = address.FileIdentity.of(path)
    if identity is not None and dial.found_free(identity):  # a command that asked for an owner a moment ago
        try:
            return opener(0.0)
        except StoreLockedError:
            pass  # someone took it since: look for them as usual
    while True:
        identity = address.FileIdentity.of(path)
        if identity is not None:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                found = dial.owner_or_free(path, identity, holder, remaining)
            except UnsafeRuntimeFolderError:
                found = None  # nowhere to meet: this process uses the file alone, or waits its lock
            if found is not None:
                return SocketLink(*found, identity.as_json())
        try:
            return opener(0.0)
        except StoreLockedError:  # taken between the look and the open (or no way to look: no POSIX locks here)
            if time.monotonic() + dial.RETRY_PAUSE > deadline:
                raise _locked(path, holder(), lock_timeout) from None
        time.sleep(dial.RETRY_PAUSE)


def file_of(location: StoreLocation) -> Path:
    """The store file of a single-file engine's location."""
    assert location.path is not None  # a single-file engine's locations are files
    return location.path


def _locked(path: Path, holder: int | None, waited: float) -> StoreLockedError:
    identity = address.FileIdentity.of(path)
    if identity is None:
        return StoreLockedError(f"{path} is in use by another process (waited {waited:g} s)")
    return dial.nobody_answers(path, identity, holder, waited)


# --- the owner's side ----------------------------------------------------------------------------------------


@dataclass
class _Serving:
    server: OwnerServer | None
    users: int = 0


_serving: dict[int, _Serving] = {}
_guard = threading.Lock()


def serve_to_others(runtime: R, path: Path) -> R:
    """Make ``runtime``'s store file (``path``) reachable by this user's other pcmem processes while any runtime of
    this process holds it: the first starts the listener, the last one's close stops it (before the file closes)."""
    backend = runtime.backend
    with _guard:
        serving = _serving.get(id(backend))
        if serving is None:
            serving = _serving[id(backend)] = _Serving(_start(runtime, path))
        serving.users += 1
    runtime.before_close(lambda: _release(id(backend)))
    return runtime


def _release(key: int) -> None:
    with _guard:
        serving = _serving[key]
        serving.users -= 1
        if serving.users:
            return
        del _serving[key]
    if serving.server is not None:
        serving.server.stop()


def stop_serving() -> None:
    """Stop every owner listener of this process (at exit: :mod:`pcmem.compose.exit`); the runtimes' own close
    still works afterwards."""
    with _guard:
        servers = [serving.server for serving in _serving.values() if serving.server is not None]
    for server in servers:
        server.stop()


def _start(runtime: OwnedRuntime, path: Path) -> OwnerServer | None:
    from pcmem.owner.server import OwnerServer

    identity = address.FileIdentity.of(path)
    if identity is None:
        return None
    places = current().places(identity, create=True)
    def greeting() -> dict[str, Any]:  # what a client prepares to take over with (ClientRuntime.prepare_takeover)
        profile = runtime.backend.embedding_profile()
        return {"profile": None if profile is None else dataclasses.asdict(profile)}

    server = OwnerServer(places.addresses, identity.as_json(), ServedSettings(runtime.for_clients), str(path),
                         greeting)
    try:
        server.start()
    except OSError as error:
        log.warning("pcmem: %s is not served to other processes: %s", path, "; ".join([*places.refused, str(error)]))
        return None
    return server


#: The reading of a client's clock that the write being served carries (see :class:`ServedSettings`).
call_time: ContextVar[datetime | None] = ContextVar("pcmem_call_time", default=None)

#: Distinct client settings kept at once (a few in practice: each app's own); beyond, the oldest are built again.
MOST_SETTINGS = 16


class ServedSettings:
    """The owner's request handler: each request runs on a Memory service built with its client's settings
    (:class:`~pcmem.owner.context.CallerSettings`: fusion, candidate limit, embedder choices), kept per distinct
    set and built when first asked for — a one-shot command that owns the store (a cold ``pcmem search``) never
    pays for resolving embedders no client asks about. A write's ``now`` (the client's clock) is what the
    service's clock reads during that call."""

    def __init__(self, memory_for: Callable[[CallerSettings], SyncMemoryService]) -> None:
        self._memory_for = memory_for
        self._dispatchers: LRU[CallerSettings, Dispatcher] = LRU(MOST_SETTINGS)
        self._rerankers = Rerankers()
        self._guard = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        context = request.get("context") or {}
        try:
            settings = CallerSettings.from_json({k: v for k, v in context.items() if k != "now"})
            now = read_call_time(context.get("now"))
            dispatcher = self._dispatcher(settings)
        except Exception as error:  # noqa: BLE001 - e.g. an unreadable profile, an unknown preset: typed, to the caller
            return {"error": encode_error(error)}
        token = call_time.set(now)
        try:
            return dispatcher(request)
        finally:
            call_time.reset(token)

    def _dispatcher(self, settings: CallerSettings) -> Dispatcher:
        with self._guard:  # server threads: the first request of a set builds it, the others wait for it
            found = self._dispatchers.get(settings)
            if found is None:
                found = Dispatcher(self._memory_for(settings), self._rerankers)
                self._dispatchers.put(settings, found)
            return found


class CandidatePool:
    """The "reranker" a client asks for when it reranks with an object of its own: selects the first ``limit``, so
    the page's trace carries the whole coarse pool, which the client's reranker then orders (:mod:`pcmem.owner.
    in_client`)."""

    policy_id = "pcmem.owner.candidates"

    def rerank(self, query: str, candidates: Any, limit: int, progress: Any = None) -> MemoryRerankDecision:
        from pcmem.types.rerank import MemoryRerankDecision

        return MemoryRerankDecision(selected_ranks=tuple(range(1, limit + 1)))


class Rerankers:
    """The rerankers clients name, built on first use and kept (a model loads once per owner)."""

    def __init__(self) -> None:
        self._built: dict[str, MemoryReranker] = {}
        self._guard = threading.Lock()

    def __call__(self, spec: RerankSpec) -> MemoryReranker:
        from pcmem.compose.rerankers import build_reranker

        if spec.policy == CANDIDATES:
            return CandidatePool()
        key = spec.model_dump_json()
        with self._guard:
            if key not in self._built:
                self._built[key] = build_reranker(spec.policy, InferenceConfig(**spec.inference),
                                                   rerank_embedder=spec.rerank_embedder)
            return self._built[key]
