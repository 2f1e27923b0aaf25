"""Reaching a store's owner over its socket: the greeting, and one request answered — standard library only.

:mod:`pcmem.owner.client` builds the Memory API on :func:`handshake`. :func:`ask_owner` is for a command that makes one
read and exits (``pcmem search``): it needs neither the client objects nor the method table
(:mod:`pcmem.owner.operations`), which are built from the library's pydantic types — importing pydantic alone cost a
cold call more than half of the Python + DuckDB floor it is measured against (issue #30).
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

from pcmem.errors import StoreLockedError
from pcmem.owner import address, protocol


def peer_uid(connection: socket.socket) -> int | None:
    """The connecting process's uid where the OS says (Linux: SO_PEERCRED), else ``None``."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or not sys.platform.startswith("linux"):
        return None
    raw = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return int(struct.unpack("3i", raw)[1])


def handshake(address: Path, identity: list[int]) -> tuple[socket.socket, int]:
    """A connection to the owner listening at ``address``, greeted; returns it and the owner's pid. Raises OSError
    when nobody listens there, StoreLockedError when the owner refuses (another protocol version, another file)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(address))
        uid = peer_uid(connection)
        if uid is not None and uid != os.getuid():
            raise StoreLockedError(f"the socket {address} is served by uid {uid}, not by you: refusing it")
        protocol.send_frame(connection, protocol.hello(identity))
        answer = protocol.recv_frame(connection)
    except BaseException:
        connection.close()
        raise
    if "error" in answer:
        connection.close()
        raise protocol.decode_error(answer["error"])
    mismatch = protocol.check_hello(answer, identity)
    if mismatch is not None:
        connection.close()
        raise StoreLockedError(f"the pcmem process that holds the store speaks another language ({mismatch}); "
                               "use one pcmem version for every process of a store")
    return connection, int(answer.get("pid", 0))


def ask_owner(path: Path, request: dict[str, Any]) -> Any:
    """The owner's result for one read ``request`` (a frame as :class:`pcmem.owner.client.Caller` sends it), as JSON;
    :data:`NO_OWNER` when no owner answers for the store file at ``path`` — nobody listens, the runtime folder is
    unsafe, or the owner went away mid-call — and the caller opens the store the full way (which owns the file, takes
    it over, or says why not). An error the owner answers is raised as the same pcmem error class."""
    identity = address.FileIdentity.of(path)
    if identity is None:
        return NO_OWNER
    try:
        connection, _ = handshake(address.socket_path(identity), identity.as_json())
    except (OSError, protocol.ConnectionLost, address.UnsafeRuntimeFolderError):
        return NO_OWNER
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
