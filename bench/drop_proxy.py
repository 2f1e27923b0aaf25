"""A same-user proxy in front of a store's owner that lets a call run and drops the connection before its answer
reaches the caller: what a client sees when its owner is killed between a write's COMMIT and the reply.

The proxy takes the owner's socket path (the owner keeps listening on the same socket, moved aside) and relays
frames both ways, one connection per client connection. A request that ``drop`` picks is sent to the owner, its
answer is read — so the owner ran it to the end — and then the client's connection is closed without the answer.
``between`` runs at that moment, before the client can send again: another agent's write, or killing the owner so
that the resend goes to a new one. The client notices the lost connection, finds the owner again (through the
proxy: the same owner) and sends the call again; what happens then is what the test or trial looks at.

Used by ``tests/api/test_exactly_once.py`` and the chaos campaign's proxy-drop trial (:mod:`pcmem_bench.retry_trial`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcmem.owner import address, protocol

Frame = dict[str, Any]


def owner_socket(store: Path) -> Path:
    """The socket the owner of the store file ``store`` listens on."""
    identity = address.FileIdentity.of(store)
    if identity is None:
        raise FileNotFoundError(store)
    return address.socket_path(identity)


@dataclass
class DropProxy:
    """Relays a store's owner socket; drops the connection of each request ``drop`` picks after the owner answered."""

    store: Path
    drop: Callable[[Frame], bool]
    between: Callable[[Frame, Frame], None] | None = None
    #: (request, answer) of every request whose answer was dropped, in order.
    dropped: list[tuple[Frame, Frame]] = field(default_factory=list)
    #: Every request relayed or dropped (the hellos left out), in order.
    requests: list[Frame] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.address = owner_socket(self.store)
        self.real = self.address.with_name(self.address.name + ".real")
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._guard = threading.Lock()

    def __enter__(self) -> DropProxy:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self) -> None:
        os.rename(self.address, self.real)  # the owner's listener stays bound to the socket, now at ``real``
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(str(self.address))
        finally:
            os.umask(old_mask)
        listener.listen(16)
        self._inode = os.stat(self.address).st_ino
        self._listener = listener
        threading.Thread(target=self._accept, name="drop-proxy", daemon=True).start()

    def stop(self) -> None:
        """Stop relaying and give the owner its socket path back (when it still listens: a killed one does not)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with contextlib.suppress(OSError):
            if os.stat(self.address).st_ino == self._inode:
                self.address.unlink()
        with contextlib.suppress(OSError):
            if not self.address.exists():
                os.rename(self.real, self.address)
            else:  # a new owner took the file over and listens there: the old socket is a dead owner's
                self.real.unlink()

    def call_owner(self, request: Frame) -> Frame:
        """Send ``request`` straight to the owner (as another agent would) and return its answer frame."""
        connection = self._upstream()
        try:
            protocol.send_frame(connection, request)
            return protocol.recv_frame(connection)
        finally:
            connection.close()

    def _upstream(self) -> socket.socket:
        identity = address.FileIdentity.of(self.store)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(str(self.real))
            protocol.send_frame(upstream, protocol.hello(identity.as_json() if identity else []))
            protocol.recv_frame(upstream)
        except BaseException:
            upstream.close()
            raise
        return upstream

    def _accept(self) -> None:
        while True:
            listener = self._listener
            if listener is None:
                return
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), name="drop-proxy-conn", daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(str(self.real))
            protocol.send_frame(upstream, protocol.recv_frame(client))  # the hello, and the owner's answer to it
            protocol.send_frame(client, protocol.recv_frame(upstream))
            while True:
                request = protocol.recv_frame(client)
                protocol.send_frame(upstream, request)
                answer = protocol.recv_frame(upstream)
                with self._guard:
                    self.requests.append(request)
                    dropping = self.drop(request)
                    if dropping:
                        self.dropped.append((request, answer))
                if dropping:
                    if self.between is not None:
                        self.between(request, answer)
                    return
                protocol.send_frame(client, answer)
        except (OSError, protocol.ConnectionLost, ValueError):
            return  # the owner or the client went away: the client sees its connection end
        finally:
            client.close()
            upstream.close()


def once(wanted: Callable[[Frame], bool]) -> Callable[[Frame], bool]:
    """A ``drop`` rule that picks the first request ``wanted`` picks, and no other."""
    done = threading.Event()

    def rule(request: Frame) -> bool:
        if done.is_set() or not wanted(request):
            return False
        done.set()
        return True

    return rule


def operation_is(*names: str) -> Callable[[Frame], bool]:
    """Picks requests of these operations (``"remember"``, ``"forget_scope"``: scope or store)."""
    return lambda request: str(request.get("op", "")).partition(".")[2] in names
