"""Waiting for a store's owner while another process holds the file: how long, and what to say when it never comes.

A held file whose owner does not answer yet is normal for a moment: the owner is opening the store (replaying a
log, migrating) and listens right after. Longer than that, what the system says decides: a holder that is stopped
will not answer until it is resumed (:class:`~pcmem.errors.OwnerStoppedError` at once); one that answers in a place
an older pcmem listened in speaks another protocol (StoreLockedError at once); any other holder is waited for up to
the caller's lock timeout, then named with what is known of it — its pid, command line, and that it does not answer.

Standard library only (``pcmem search`` beside an owner waits here without importing pydantic or DuckDB).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pcmem.errors import StoreLockedError
from pcmem.owner import processes, protocol
from pcmem.owner.address import FileIdentity, older_places
from pcmem.owner.dial import RETRY_PAUSE, WatchedConnection, dial, stopped_error
from pcmem.owner.transport import current
from pcmem.store.duckdb.lock_probe import lock_holder

#: Seconds an older pcmem's owner may take to answer the greeting when a client looks for one.
OLDER_HELLO_TIMEOUT = 2.0


def owner_or_free(path: Path, identity: FileIdentity,
                  lock_timeout: float) -> tuple[WatchedConnection, int, Path] | None:
    """A greeted connection to the owner of the store file at ``path`` (with its pid and address), or ``None`` when
    nobody holds the file (the caller opens it and becomes the owner). Raises OwnerStoppedError, StoreLockedError
    (see the module docstring), UnsafeRuntimeFolderError."""
    deadline = time.monotonic() + lock_timeout
    looked_at_older = False
    while True:
        found = dial(identity)
        if found is not None:
            return found
        holder = lock_holder(path)
        if holder is None:
            return None
        check_holder(holder)
        if not looked_at_older:
            looked_at_older = True
            older = older_owner(identity)
            if older is not None:
                raise StoreLockedError(f"{path} is held by {processes.describe(holder)}, an older pcmem: {older}; "
                                       "use one pcmem version for every process of a store (restart it with this one)")
        if time.monotonic() + RETRY_PAUSE > deadline:
            raise nobody_answers(path, identity, holder, lock_timeout)
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
    looked = ", ".join(str(where) for where in places.addresses)
    return StoreLockedError(
        f"{path} is in use by {processes.describe(holder)}, which does not answer where pcmem owners listen ({looked}) "
        f"after {waited:g} s: it opened the file without serving it (a program using DuckDB itself, or a pcmem "
        "that predates serving); close the store there, or wait for it to exit")


def older_owner(identity: FileIdentity) -> str | None:
    """What answers for this file where an older pcmem listened (see :func:`pcmem.owner.address.older_places`)."""
    transport = current()
    for where in older_places(identity):
        try:
            raw = transport.connect(where, OLDER_HELLO_TIMEOUT)
        except OSError:
            continue
        try:
            if transport.peer(raw).uid not in (None, os.getuid()):
                continue  # another user's socket: nothing of this store is said to it
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
