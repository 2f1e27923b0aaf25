"""Who serves a DuckDB store file: this process (its owner) or the process that holds it already (this one is then
its client). See :mod:`pcmem.owner` for the socket, the protocol and the client objects.

Opening a store file: if this process holds it already, use that. Else ask the owner's socket first (a client
never imports DuckDB or loads a model); nobody answers → open the file: the DuckDB lock decides who becomes the
owner, and the owner starts listening at once. A file that is locked while no socket answers yet (its owner is
starting up) is retried, socket then file, for up to ``lock_timeout`` seconds. The same loop runs when a client
finds its owner gone (:class:`pcmem.compose.runtime.ClientRuntime`): it takes the file over, or connects to whoever did.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pcmem.config import InferenceConfig
from pcmem.errors import StoreLockedError
from pcmem.owner import address, waiting
from pcmem.owner.client import SocketLink
from pcmem.owner.dial import RETRY_PAUSE
from pcmem.owner.operations import Dispatcher
from pcmem.owner.protocol import encode_error
from pcmem.owner.rerank_spec import RerankSpec
from pcmem.owner.transport import current
from pcmem.store.port import FileMaintenance

if TYPE_CHECKING:
    from pcmem.memory.service import SyncMemoryService
    from pcmem.owner.server import OwnerServer
    from pcmem.rerank.port import MemoryReranker

log = logging.getLogger(__name__)

class OwnedRuntime(Protocol):
    """What :func:`serve` needs of a runtime (:class:`pcmem.compose.runtime.SyncRuntime`)."""

    backend: Any

    def before_close(self, hook: Callable[[], None]) -> None: ...

    def for_clients(self) -> SyncMemoryService: ...


R = TypeVar("R", bound=OwnedRuntime)


def open_owned(path: Path, opener: Callable[[float], R], make_client: Callable[[SocketLink], R], *,
               lock_timeout: float) -> R:
    """The store at ``path``: this process's own runtime (serving others from now on), or a client of its owner."""
    from pcmem.compose import registry

    if registry.holds(path):
        return serve(opener(lock_timeout))
    found = owner_or_file(path, opener, lock_timeout)
    return make_client(found) if isinstance(found, SocketLink) else serve(found)


def owner_or_file(path: Path, opener: Callable[[float], R], lock_timeout: float) -> SocketLink | R:
    """A link to the file's owner, or the file opened by this process (which is then its owner). While another
    process holds the file without answering yet, this waits for it (:mod:`pcmem.owner.waiting`): up to
    ``lock_timeout`` seconds, or not at all when it is stopped (OwnerStoppedError) or an older pcmem
    (StoreLockedError)."""
    deadline = time.monotonic() + lock_timeout
    while True:
        identity = address.FileIdentity.of(path)
        if identity is not None:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                found = waiting.owner_or_free(path, identity, remaining)
            except address.UnsafeRuntimeFolderError:
                found = None  # nowhere to meet: this process uses the file alone, or waits its lock
            if found is not None:
                return SocketLink(*found, identity.as_json())
        try:
            return opener(0.0)
        except StoreLockedError:  # taken between the look and the open (or no way to look: no POSIX locks here)
            if time.monotonic() + RETRY_PAUSE > deadline:
                raise _locked(path, lock_timeout) from None
        time.sleep(RETRY_PAUSE)


def _locked(path: Path, waited: float) -> StoreLockedError:
    from pcmem.store.duckdb.lock_probe import lock_holder

    holder = lock_holder(path)
    identity = address.FileIdentity.of(path)
    if identity is None:
        return StoreLockedError(f"{path} is in use by another process (waited {waited:g} s)")
    return waiting.nobody_answers(path, identity, holder, waited)


# --- the owner's side ----------------------------------------------------------------------------------------


@dataclass
class _Serving:
    server: OwnerServer | None
    users: int = 0


_serving: dict[int, _Serving] = {}
_guard = threading.Lock()


def serve(runtime: R) -> R:
    """Make ``runtime``'s store file reachable by this user's other pcmem processes while any runtime of this process
    holds it: the first starts the listener, the last one's close stops it (before the file closes)."""
    backend = runtime.backend
    with _guard:
        serving = _serving.get(id(backend))
        if serving is None:
            serving = _serving[id(backend)] = _Serving(_start(runtime))
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


def _start(runtime: OwnedRuntime) -> OwnerServer | None:
    from pcmem.owner.server import OwnerServer

    if not isinstance(runtime.backend, FileMaintenance):
        return None  # a store that is not a file is no one's to own: its engine serves every process
    path = Path(runtime.backend.path)
    identity = address.FileIdentity.of(path)
    if identity is None:
        return None
    places = current().places(identity, create=True)
    server = OwnerServer(places.addresses, identity.as_json(), DispatchOnFirstCall(runtime.for_clients), str(path))
    try:
        server.start()
    except OSError as error:
        log.warning("pcmem: %s is not served to other processes: %s", path, "; ".join([*places.refused, str(error)]))
        return None
    return server


class DispatchOnFirstCall:
    """The owner's request handler, built when the first request arrives: the clients' Memory service resolves the
    store's embedder and reads its profile (a DuckDB read and the preset code, tens of ms), which a one-shot command
    that owns the store (a cold ``pcmem search``) would otherwise pay although no client may ever connect (#30)."""

    def __init__(self, memory_for_clients: Callable[[], SyncMemoryService]) -> None:
        self._memory_for_clients = memory_for_clients
        self._dispatcher: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self._guard = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._guard:  # server threads: the first request builds it, the others wait for it
            if self._dispatcher is None:
                try:
                    self._dispatcher = Dispatcher(self._memory_for_clients(), Rerankers())
                except Exception as error:  # noqa: BLE001 - e.g. an unreadable profile: the caller gets it, typed
                    return {"error": encode_error(error)}
        return self._dispatcher(request)


class Rerankers:
    """The rerankers clients name, built on first use and kept (a model loads once per owner)."""

    def __init__(self) -> None:
        self._built: dict[str, MemoryReranker] = {}
        self._guard = threading.Lock()

    def __call__(self, spec: RerankSpec) -> MemoryReranker:
        from pcmem.compose.rerankers import build_reranker

        key = spec.model_dump_json()
        with self._guard:
            if key not in self._built:
                self._built[key] = build_reranker(spec.policy, InferenceConfig(**spec.inference),
                                                   rerank_embedder=spec.rerank_embedder)
            return self._built[key]
