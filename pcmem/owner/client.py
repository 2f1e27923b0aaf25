"""A client of a store's owner: the same Memory objects, methods, results and errors, served by another process.

:class:`ClientMemoryService` and :class:`ClientScopedMemory` have the methods of
:class:`~pcmem.memory.service.SyncMemoryService` and :class:`~pcmem.memory.scoped.SyncScopedMemory` (generated from
them, with their signatures and docstrings); each call becomes one request to the owner (see
:mod:`pcmem.owner.operations`).

**Hand-off.** When the owner goes away (it quit, or was killed), the next call notices (connection refused, or the
connection ends), and :class:`Caller` asks for a new link — the composition root opens the file (the file lock
decides who becomes the owner: no split brain) or connects to whoever did — and sends the call again. Every write
crosses with an idempotency key (the caller's, or a new uuid4 per call), kept on every resend: the owner records it
with the write, in the write's transaction, so a write whose answer was lost is answered again with its first outcome
— by the same owner or by the one that took the file over — and never applied twice
(:mod:`pcmem.memory.write_records`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pcmem.errors import ConfigurationError, OwnerGoneError, OwnerStoppedError
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.memory.service import SyncMemoryService
from pcmem.owner import in_client, protocol
from pcmem.owner.dial import WatchedConnection, handshake
from pcmem.owner.in_client import LocalParts
from pcmem.owner.operations import SCOPED_OPERATIONS, STORE_OPERATIONS, WRITES, operation
from pcmem.owner.rerank_spec import RerankChoice
from pcmem.rerank.choice import DEFAULT, reranker_choice
from pcmem.validation import validate_scope

if TYPE_CHECKING:
    from pcmem.rerank.port import MemoryReranker

#: Times one call is sent again after the owner went away (each time after a new owner was found).
MAX_ATTEMPTS = 3


class OwnerLost(Exception):
    """The link to the owner broke; ``sent``: the request may have reached it. Internal to this package."""

    def __init__(self, sent: bool) -> None:
        super().__init__("the owner went away")
        self.sent = sent


class Link(Protocol):
    """How requests reach a runtime: a socket to the owner, or (after a take-over) this process's own runtime."""

    def call(self, request: dict[str, Any]) -> dict[str, Any]: ...

    def close(self) -> None: ...


class SocketLink:
    """Connections to one owner, reused across calls; each thread takes an idle one or opens another.

    A call waits as long as the owner works; a stopped owner ends it with OwnerStoppedError (see
    :mod:`pcmem.owner.dial`), and that connection is dropped: its answer, if the owner resumes, belongs to no call."""

    def __init__(self, first: WatchedConnection, owner_pid: int, address: Path, identity: list[int]) -> None:
        self.address, self.identity, self.owner_pid = address, identity, owner_pid
        #: The store's embedding profile as the owner said when greeted (JSON), if it did.
        self.profile: dict[str, Any] | None = first.greeting.get("profile")
        #: What the client adds to each request (its settings: :mod:`pcmem.owner.context`).
        self.frame: Callable[[dict[str, Any]], dict[str, Any]] = _as_it_is
        self._idle = [first]
        self._guard = threading.Lock()
        self._closed = False

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        request = self.frame(request)
        with self._guard:
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            try:
                connection, _ = handshake(self.address, self.identity)
            except (OSError, protocol.ConnectionLost):
                raise OwnerLost(sent=False) from None
        sent = False  # a Unix socket whose other side is gone refuses the write (EPIPE): the request surely never arrived
        try:
            protocol.send_frame(connection, request)
            sent = True
            response = protocol.recv_frame(connection)
        except (OSError, protocol.ConnectionLost):
            connection.close()
            raise OwnerLost(sent=sent) from None
        except OwnerStoppedError as stopped:
            connection.close()
            if sent and request.get("op", "").partition(".")[2] in WRITES:
                raise OwnerStoppedError(f"{stopped}. This write was sent before it stopped and runs when it resumes: "
                                        "read before writing it again", pid=stopped.pid,
                                        command=stopped.command) from None
            raise
        except BaseException:  # a request over the frame limit (InputError): nothing was sent
            connection.close()
            raise
        with self._guard:
            if self._closed:
                connection.close()
            else:
                self._idle.append(connection)
        return response

    def close(self) -> None:
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


class LocalLink:
    """Requests run on this process's own runtime (a client that took the file over), as the owner would run them."""

    def __init__(self, handle: Callable[[dict[str, Any]], dict[str, Any]], close: Callable[[], None]) -> None:
        self._handle, self.close = handle, close
        self.frame: Callable[[dict[str, Any]], dict[str, Any]] = _as_it_is

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._handle(self.frame(request))


def _as_it_is(request: dict[str, Any]) -> dict[str, Any]:
    return request


class Caller:
    """Sends calls over the current link; on a lost owner, gets a new link and sends the call again (a write with the
    same idempotency key: see the module docstring)."""

    def __init__(self, link: Link, relink: Callable[[], Link], default_rerank: MemoryReranker | None) -> None:
        self.link = link
        self._relink = relink
        self.default_rerank = default_rerank
        self._guard = threading.Lock()

    def call(self, key: str, scope: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        op = operation(key)
        wire, local = op.encode(args, kwargs)  # the library's own check: a call it refuses is refused here
        if op.is_write and wire.get("idempotency_key") is None:
            wire["idempotency_key"] = uuid.uuid4().hex  # this write, on every resend: applied once, answered again
        rerank = self._rerank(local.get("reranker", DEFAULT)) if op.takes_reranker else None
        request = {"op": key, "scope": scope, "args": wire, "rerank": rerank}
        for attempt in range(MAX_ATTEMPTS + 1):
            link = self.link
            try:
                response = link.call(request)
            except OwnerLost:
                self._replace(link)
                if attempt == MAX_ATTEMPTS:
                    again = (f": it may have been applied, once; call it again with idempotency_key="
                             f"{wire['idempotency_key']!r} to apply it at most once" if op.is_write else "")
                    raise OwnerGoneError(f"the store's owner went away {MAX_ATTEMPTS + 1} times during "
                                         f"{op.name}; nothing more is tried{again}") from None
                continue
            if "error" in response:
                raise protocol.decode_error(response["error"])
            result = response["result"]  # JSON values from a socket; bytes from this process's own dispatcher
            return op.result.validate_json(result.data) if isinstance(result, protocol.Encoded) else \
                op.result.validate_python(result)
        raise AssertionError("unreachable")

    def _rerank(self, reranker: Any) -> dict[str, Any] | None:
        """The reranker the owner builds and runs for this call, by name; ``None`` for none (the owner's service for
        clients has no reranker of its own: see :meth:`pcmem.SyncRuntime.for_clients`)."""
        choice = reranker_choice(reranker)
        chosen = self.default_rerank if choice == DEFAULT else choice
        if chosen is None or chosen == "none":
            return None
        if not isinstance(chosen, RerankChoice):
            raise ConfigurationError(
                f"this process is a client of the pcmem process that holds the store, and a reranker object "
                f"({type(chosen).__name__}) cannot run there: name it with runtime.build_reranker(policy) instead")
        return chosen.spec.model_dump(mode="json")

    def _replace(self, broken: Link) -> None:
        with self._guard:
            if self.link is not broken:
                return  # another thread already found the new owner
            with contextlib.suppress(Exception):
                broken.close()
            self.link = self._relink()

    def close(self) -> None:
        with self._guard:
            self.link.close()


def _remote(key: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._caller.call(key, self.scope, args, kwargs)

    return call


class ClientScopedMemory:
    """One scope of a store another process owns; the methods of :class:`~pcmem.memory.scoped.SyncScopedMemory`."""

    def __init__(self, caller: Caller, scope: str, local: LocalParts) -> None:
        self.scope = validate_scope(scope)
        self._caller = caller
        self._local = local


class ClientMemoryService:
    """Every scope of a store another process owns; the methods of :class:`~pcmem.memory.service.SyncMemoryService`."""

    scope: str | None = None  # its calls name no scope (a ClientScopedMemory's name theirs)

    def __init__(self, caller: Caller, local: LocalParts | None = None) -> None:
        self._caller = caller
        self._local = local or LocalParts()

    def for_scope(self, scope: str) -> ClientScopedMemory:
        """A handle on one scope (cheap; nothing is read). Raises InputError for an invalid scope name."""
        return ClientScopedMemory(self._caller, scope, self._local)


def _searching(key: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def search(self: Any, *args: Any, **kwargs: Any) -> Any:
        return in_client.search(self._caller, self._local, key, self.scope, args, kwargs)

    return search


def _remembering(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def remember(self: Any, *args: Any, **kwargs: Any) -> Any:
        return in_client.remember(self._caller, self._local, self.scope, args, kwargs)

    return remember


for _name in SCOPED_OPERATIONS:
    setattr(ClientScopedMemory, _name, _remote(f"scope.{_name}", getattr(SyncScopedMemory, _name)))
for _name in STORE_OPERATIONS:
    setattr(ClientMemoryService, _name, _remote(f"store.{_name}", getattr(SyncMemoryService, _name)))
# What may run in this process (its own reranker, its write gate): pcmem.owner.in_client
ClientScopedMemory.search = _searching("scope.search", SyncScopedMemory.search)  # type: ignore[attr-defined]
ClientMemoryService.search = _searching("store.search", SyncMemoryService.search)  # type: ignore[attr-defined]
ClientScopedMemory.remember = _remembering(SyncScopedMemory.remember)  # type: ignore[attr-defined]
