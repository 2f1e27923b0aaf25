"""What every owner transport gives (:mod:`pcmem.owner.transport` has the interface's story and the Unix socket,
:mod:`pcmem.owner.pipes` the named pipe): connections, listeners, the peer, and the refusal of another user's.

Its own module so that each transport and the choice between them (:func:`pcmem.owner.transport.current`) import it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pcmem import system
from pcmem.owner.address import FileIdentity, Places


def path_limit() -> int:
    """The longest path a Unix socket address holds (``sun_path``): 108 bytes on Linux, 104 on macOS and the BSDs."""
    return 108 if system.KIND == "linux" else 104


#: The limit on this system (tests and messages; the transport asks :func:`path_limit`).
PATH_LIMIT = path_limit()


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a connection, as far as the system says."""

    pid: int | None
    uid: int | None


class NotYoursError(PermissionError):
    """The other end of a connection is not this user's (another uid, or it cannot prove it holds the user's key)."""


class Connection(Protocol):
    """A socket, or what behaves as one for :mod:`pcmem.owner.protocol` and :mod:`pcmem.owner.dial`."""

    def sendall(self, data: bytes, /) -> Any: ...

    def send(self, data: bytes | memoryview, /) -> int: ...

    def recv(self, count: int, /) -> bytes: ...

    def settimeout(self, value: float | None, /) -> None: ...

    def shutdown(self, how: int, /) -> None: ...

    def close(self) -> None: ...


class Listening(Protocol):
    """An owner's listener: :meth:`accept` gives the next connection (OSError once closed)."""

    def accept(self) -> Connection: ...

    def close(self) -> None: ...


class Transport(Protocol):
    """Where and how an owner listens and a client connects (see the module docstring)."""

    name: str

    def places(self, identity: FileIdentity, *, create: bool) -> Places: ...

    def listen(self, where: Path) -> Listening: ...

    def connect(self, where: Path, timeout: float) -> Connection: ...

    def admit(self, connection: Connection) -> Peer: ...

    def peer(self, connection: Connection) -> Peer: ...

    def older_places(self, identity: FileIdentity) -> list[Path]: ...
