"""Reaching a store's owner: the greeting, bounded waits, and one request answered — standard library only.

:mod:`pcmem.owner.client` builds the Memory API on :func:`dial`. :func:`ask_owner` is for a command that makes one
read and exits (``pcmem search``): it needs neither the client objects nor the method table
(:mod:`pcmem.owner.operations`), which are built from the library's pydantic types — importing pydantic alone cost a
cold call more than half of the Python + DuckDB floor it is measured against.

**Bounds.** Every wait on the owner is bounded by what the owner is doing, not by a clock: a call waits as long as
the owner runs (a decision rerank or an import may take minutes), and ends with :class:`~pcmem.errors.
OwnerStoppedError` once the owner has been seen stopped for :data:`STOPPED_FOR` seconds (see
:mod:`pcmem.owner.processes`). Only the greeting, which the owner answers without touching the store, has a
clock: :data:`HELLO_TIMEOUT`.

**Waiting for a held file** (:func:`owner_or_free`). A held file whose owner does not answer yet is normal for a
moment: the owner is opening the store (replaying a log, migrating) and listens right after. Longer than that, what
the system says decides: a holder that is stopped will not answer until it is resumed (OwnerStoppedError at once);
one that answers where an older pcmem listened speaks another protocol (StoreLockedError at once); any other holder
is waited for up to the caller's lock timeout, then named with what is known of it: its pid, its command line, and
that it does not answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pcmem.errors import OwnerStoppedError, StoreLockedError, UnsafeRuntimeFolderError
from pcmem.owner import processes, protocol
from pcmem.owner.address import FileIdentity
from pcmem.owner.transport import Connection, NotYoursError, current

#: Who holds a store file now: a pid (0: the system does not say which), or ``None`` when nobody does (the storage
#: engine's :meth:`~pcmem.store.engine.StorageEngine.holder`, asked without taking or releasing anything).
Holder = Callable[[], int | None]

#: Seconds between two looks at a silent owner, and how long it must stay stopped before a call gives up on it (a
#: debugger's breakpoint or a job control stop; a tracer's stop on every system call lasts microseconds).
LOOK_EVERY = 0.2
STOPPED_FOR = 1.0
#: Seconds a running owner may take to answer the greeting (no store work: a thread of it answers at once).
HELLO_TIMEOUT = 30.0
#: Seconds connecting may take (an owner's backlog is full only when it does not accept: then it fails at once).
CONNECT_TIMEOUT = 5.0
#: Seconds between two looks for an owner that holds the file but does not listen yet (it is opening the store).
RETRY_PAUSE = 0.02


class WatchedConnection:
    """A connection to the owner whose waits look at the owner while it is silent (see the module docstring).

    ``sendall``/``recv`` as a socket's (what :mod:`pcmem.owner.protocol` uses); a silent owner that is gone ends
    the wait as a broken connection would (``ConnectionResetError``), one stopped for :data:`STOPPED_FOR` seconds
    with :class:`OwnerStoppedError`, and past ``deadline`` (the greeting) with ``TimeoutError``."""

    def __init__(self, connection: Connection, owner_pid: int | None, *, deadline: float | None = None) -> None:
        self.connection, self.owner_pid, self.deadline = connection, owner_pid, deadline
        self.doing = "holds the store" if deadline is not None else "serves the store to this process"
        #: The owner's answer to the greeting (its pid, and hints such as the store's embedding profile).
        self.greeting: dict[str, Any] = {}
        self._stopped_since: float | None = None
        connection.settimeout(LOOK_EVERY)

    def recv(self, count: int) -> bytes:
        while True:
            try:
                data = self.connection.recv(count)
            except TimeoutError:
                self._look()
                continue
            self._stopped_since = None
            return data

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = self.connection.send(view)
            except TimeoutError:
                self._look()
                continue
            self._stopped_since = None
            view = view[sent:]

    def _look(self) -> None:
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline:
            raise TimeoutError(f"the owner did not answer within {HELLO_TIMEOUT:g} s")
        if self.owner_pid is None:
            return
        seen = processes.state(self.owner_pid)
        if seen == "gone":
            raise ConnectionResetError("the owner is gone")
        if seen != "stopped":
            self._stopped_since = None
            return
        self._stopped_since = self._stopped_since or now
        if now - self._stopped_since >= STOPPED_FOR:
            raise stopped_error(self.owner_pid, self.doing)

    def close(self) -> None:
        self.connection.close()

    def shutdown(self, how: int) -> None:
        self.connection.shutdown(how)


def stopped_error(pid: int, doing: str) -> OwnerStoppedError:
    """The error for a stopped owner: who it is and what to do, in one line."""
    return OwnerStoppedError(f"{processes.describe(pid)} {doing} and is stopped (Ctrl-Z, a debugger or a suspended "
                             f"job): {processes.stopped_advice(pid)}", pid=pid, command=processes.command_line(pid))


def handshake(where: Path, identity: list[int]) -> tuple[WatchedConnection, int]:
    """A connection to the owner listening at ``where``, greeted; returns it and the owner's pid. Raises OSError
    when nobody listens there (or a running owner did not greet within :data:`HELLO_TIMEOUT`), StoreLockedError when
    the owner refuses (another protocol version, another file, another user), OwnerStoppedError when it is stopped."""
    transport = current()
    try:
        raw = transport.connect(where, CONNECT_TIMEOUT)
    except NotYoursError as foreign:
        raise StoreLockedError(str(foreign)) from None
    try:
        peer = transport.peer(raw)
        connection = WatchedConnection(raw, peer.pid, deadline=time.monotonic() + HELLO_TIMEOUT)
        protocol.send_frame(connection, protocol.hello(identity))
        answer = protocol.recv_frame(connection)
        connection.deadline, connection.doing = None, "serves the store to this process"
    except BaseException:
        raw.close()
        raise
    if "error" in answer:
        raw.close()
        raise protocol.decode_error(answer["error"])
    mismatch = protocol.check_hello(answer, identity)
    if mismatch is not None:
        raw.close()
        raise StoreLockedError(f"{processes.describe(peer.pid)} holds the store and speaks another language "
                               f"({mismatch}); use one pcmem version for every process of a store")
    owner_pid = int(answer.get("pid") or peer.pid or 0)
    connection.owner_pid = connection.owner_pid or owner_pid or None
    connection.greeting = answer
    return connection, owner_pid


def dial(identity: FileIdentity) -> tuple[WatchedConnection, int, Path] | None:
    """A greeted connection to the owner of the file with ``identity`` at any of its places (see
    :mod:`pcmem.owner.address`), with the owner's pid and the address; ``None`` when nobody answers there.
    Raises what :func:`handshake` raises besides OSError."""
    for where in current().places(identity, create=False).addresses:
        try:
            connection, pid = handshake(where, identity.as_json())
        except (OSError, protocol.ConnectionLost):
            continue
        return connection, pid, where
    return None


#: Seconds an older pcmem's owner may take to answer the greeting when a client looks for one.
OLDER_HELLO_TIMEOUT = 2.0


def owner_or_free(path: Path, identity: FileIdentity, holder: Holder,
                  lock_timeout: float) -> tuple[WatchedConnection, int, Path] | None:
    """A greeted connection to the owner of the store file at ``path`` (with its pid and address), or ``None`` when
    nobody holds the file (``holder``: who does; the caller opens it and becomes the owner). Raises
    OwnerStoppedError, StoreLockedError (see the module docstring), UnsafeRuntimeFolderError."""
    deadline = time.monotonic() + lock_timeout
    looked_at_older = False
    while True:
        found = dial(identity)
        if found is not None:
            return found
        pid = holder()
        if pid is None:
            return None
        check_holder(pid)
        if not looked_at_older:
            looked_at_older = True
            older = older_owner(identity)
            if older is not None:
                raise StoreLockedError(f"{path} is held by {processes.describe(pid)}, an older pcmem: {older}; "
                                       "use one pcmem version for every process of a store (restart it with this one)")
        if time.monotonic() + RETRY_PAUSE > deadline:
            raise nobody_answers(path, identity, pid, lock_timeout)
        time.sleep(RETRY_PAUSE)


def check_holder(holder: int) -> None:
    """Raise OwnerStoppedError when the process ``holder`` that holds the file is stopped."""
    if holder and processes.state(holder) == "stopped":
        raise stopped_error(holder, "holds the store")


def nobody_answers(path: Path, identity: FileIdentity, holder: int | None, waited: float) -> StoreLockedError:
    """The error for a file held by a process that does not answer as a pcmem owner: what is known of it."""
    places = current().places(identity, create=False)
    if not places.addresses:
        return StoreLockedError(f"{path} is in use by {processes.describe(holder)}, and pcmem cannot reach its owner: "
                                f"{'; '.join(places.refused)}")
    silent = next((where for where in places.addresses if _listens(where)), None)
    if silent is not None:  # where no stopped state can be asked (Windows): a suspended owner, or one overwhelmed
        return StoreLockedError(
            f"{path} is in use by {processes.describe(holder)}, and the pcmem owner listening at {silent} did not "
            f"answer within {waited:g} s: it is suspended (a debugger, a paused job) or overwhelmed; resume or end "
            "it, or wait and try again")
    looked = ", ".join(str(where) for where in places.addresses)
    return StoreLockedError(
        f"{path} is in use by {processes.describe(holder)}, which does not answer where pcmem owners listen ({looked}) "
        f"after {waited:g} s: it opened the file without serving it (a program using DuckDB itself, or a pcmem "
        "that predates serving); close the store there, or wait for it to exit")


#: Seconds a look for a silent listener may take (see :func:`nobody_answers`).
SILENT_LOOK = 1.0


def _listens(where: Path) -> bool:
    """Whether something accepts connections at ``where`` (the pipe's key challenge, if any, unanswered counts)."""
    try:
        connection = current().connect(where, SILENT_LOOK)
    except TimeoutError:
        return True
    except OSError:
        return False
    connection.close()
    return True


def older_owner(identity: FileIdentity) -> str | None:
    """What answers for this file where an older pcmem listened (see :func:`pcmem.owner.address.older_places`)."""
    transport = current()
    for where in transport.older_places(identity):
        try:
            raw = transport.connect(where, OLDER_HELLO_TIMEOUT)
        except OSError:  # nobody, or another user's socket (NotYoursError): nothing of this store is said to it
            continue
        try:
            connection = WatchedConnection(raw, None, deadline=time.monotonic() + OLDER_HELLO_TIMEOUT)
            protocol.send_frame(connection, protocol.hello(identity.as_json()))
            answer = protocol.recv_frame(connection)
        except (OSError, protocol.ConnectionLost):
            return f"it listens at {where} and did not answer this pcmem's greeting"
        finally:
            raw.close()
        said = answer.get("error", {}).get("message") if isinstance(answer.get("error"), dict) else None
        return (f"it listens at {where}, where older pcmem versions listened"
                + (f", and answered this pcmem: {said}" if said else f" (protocol {answer.get('pcmem')!r})"))
    return None


def ask_owner(path: Path, request: dict[str, Any], holder: Holder, *, lock_timeout: float = 0.0) -> Any:
    """The owner's result for one read ``request`` (a frame as :class:`pcmem.owner.client.Caller` sends it), as JSON;
    :data:`NO_OWNER` when nobody holds the store file at ``path`` (``holder``: who does, see :func:`owner_or_free`;
    or the owner went away mid-call), and the caller
    opens it the full way (this process then owns it). While another process holds the file and does not answer
    yet (it is opening the store), this waits for it, without loading anything, for up to ``lock_timeout``
    seconds. An error the owner answers is raised as the same pcmem error class; a stopped owner is
    OwnerStoppedError, one that never answers StoreLockedError (both name the process)."""
    identity = FileIdentity.of(path)
    if identity is None:
        return NO_OWNER
    try:
        found = owner_or_free(path, identity, holder, lock_timeout)
    except UnsafeRuntimeFolderError:
        return NO_OWNER
    if found is None:
        _found_free.add(identity)
        return NO_OWNER
    connection = found[0]
    try:
        protocol.send_frame(connection, request)
        response = protocol.recv_frame(connection)
    except (OSError, protocol.ConnectionLost):
        return NO_OWNER  # a read: sending it again, the full way, cannot apply anything twice
    finally:
        connection.close()
    if "error" in response:
        raise protocol.decode_error(response["error"])
    return response["result"]


#: What :func:`ask_owner` returns when no owner answered (``None`` is a result some reads have).
NO_OWNER: Any = object()

#: Files :func:`ask_owner` just found nobody holding (see :func:`found_free`).
_found_free: set[FileIdentity] = set()


def found_free(identity: FileIdentity) -> bool:
    """Whether :func:`ask_owner` found nobody holding this file just now, in this process (asked once: the answer is
    forgotten). The command then opens the file the full way without looking for an owner again; the file's lock
    still decides, so an owner that arrived meanwhile is found when the open is refused."""
    if identity in _found_free:
        _found_free.discard(identity)
        return True
    return False
