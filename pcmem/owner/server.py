"""The owner's listener: a daemon thread accepting same-user connections on the store's socket, one thread each.

A connection opens with the hello (protocol version, file identity); then every request frame runs on the owner's
runtime through a :class:`~pcmem.owner.operations.Dispatcher` and its answer goes back as one frame. Calls of
different connections run concurrently, as they would on threads of one process.

Stopping closes the listener, removes the socket (only if it is still this server's: a new owner may already have
bound its own there), ends every connection and waits for calls in flight to finish, before the caller closes the
file: a write either commits before the client sees the connection end, or never starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pcmem.errors import PcmemError
from pcmem.native_calls import exempt_this_thread
from pcmem.owner import protocol
from pcmem.owner.transport import Connection, Listening, NotYoursError, current

log = logging.getLogger(__name__)

#: Seconds :meth:`OwnerServer.stop` waits for calls in flight (a rerank may run longer; it is then abandoned).
STOP_WAIT = 30.0


class OwnerServer:
    """Serves one store file's Memory API to the same user's other processes."""

    def __init__(self, places: list[Path], identity: list[int], handle: Callable[[dict[str, Any]], dict[str, Any]],
                 store: str, greeting: Callable[[], dict[str, Any]] | None = None) -> None:
        self.places = places
        self._greeting = greeting or dict
        self.address: Path | None = None
        self.identity = identity
        self._handle = handle
        self._store = store
        self._transport = current()
        self._listener: Listening | None = None
        self._connections: set[Connection] = set()
        self._workers: set[threading.Thread] = set()
        self._guard = threading.Lock()
        self._stopping = False

    def start(self) -> None:
        """Listen at the first of ``places`` where the transport can (replacing a stale socket there: this process
        holds the file, so whoever made it is gone) and start accepting. Raises OSError when no place can be used."""
        failures = []
        for where in self.places:
            try:
                listener = self._transport.listen(where)
            except OSError as error:
                failures.append(f"{where}: {error.strerror or error}")
                continue
            self.address, self._listener = where, listener
            break
        else:
            raise OSError(f"no place to listen ({'; '.join(failures) or 'none usable'})")
        threading.Thread(target=self._accept, name="pcmem-owner", daemon=True).start()

    def _accept(self) -> None:
        listener = self._listener
        assert listener is not None
        while True:
            try:
                connection = listener.accept()
            except OSError:
                return  # closed by stop()
            with self._guard:
                if self._stopping:
                    connection.close()
                    return
                self._connections.add(connection)
                worker = threading.Thread(target=self._serve, args=(connection,), name="pcmem-owner-conn",
                                          daemon=True)
                self._workers.add(worker)
                worker.start()  # under the guard: stop() never sees a worker it cannot join yet

    def _serve(self, connection: Connection) -> None:
        exempt_this_thread()  # joined by stop() before an exiting process drains its native calls
        try:
            try:
                self._transport.admit(connection)
            except NotYoursError as refused:
                log.warning("pcmem owner: %s", refused)
                return
            if not self._greet(connection):
                return
            while True:
                request = protocol.recv_frame(connection)
                response = self._handle(request)
                try:
                    protocol.send_frame(connection, response)
                except PcmemError as error:  # an answer over the frame limit: say so instead
                    protocol.send_frame(connection, {"error": protocol.encode_error(error)})
        except (protocol.ConnectionLost, OSError, ValueError):  # gone, or sent something that is not a frame
            pass
        finally:
            connection.close()
            with self._guard:
                self._connections.discard(connection)
                self._workers.discard(threading.current_thread())

    def _greet(self, connection: Connection) -> bool:
        hello = protocol.recv_frame(connection)
        mismatch = protocol.check_hello(hello, self.identity)
        if mismatch is not None:
            protocol.send_frame(connection, {"error": {"type": "StoreLockedError", "fields": {},
                                                       "message": f"the owner refused: {mismatch}"}})
            return False
        try:
            extra = self._greeting()
        except Exception:  # noqa: BLE001 - what the greeting adds is a hint (the store's profile), never a reason to refuse
            extra = {}
        protocol.send_frame(connection, {**protocol.hello(self.identity), **extra, "pid": os.getpid(),
                                         "store": self._store})
        return True

    def stop(self) -> None:
        """Stop listening, remove the socket, end the connections and wait for calls in flight. Idempotent."""
        with self._guard:
            if self._stopping:
                return
            self._stopping = True
            listener, self._listener = self._listener, None
            connections = list(self._connections)
            workers = list(self._workers)
        if listener is not None:
            listener.close()  # removes the socket file, unless a new owner's is there already
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RD)  # a call running finishes and its answer is still sent
        for worker in workers:
            if worker is not threading.current_thread():
                worker.join(STOP_WAIT)
