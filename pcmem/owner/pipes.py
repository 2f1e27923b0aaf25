"""The owner transport of a system without Unix sockets (Windows): :mod:`multiprocessing.connection`'s listener and
client — a named pipe (``AF_PIPE``) on Windows, a Unix socket elsewhere — and a key only the user can read, which
both sides prove they hold before anything of the store crosses.

**Who can connect.** On Windows a named pipe's name is global to the machine, so the peer check is the key, not the
name: the owner sends a random challenge and the client answers with an HMAC-SHA256 of it under the key, then the
client challenges the owner the same way (a process that took the pipe's name first cannot pass for the owner).
The key is 32 random bytes in ``owner.key``, made by the first owner: on Windows in ``%LOCALAPPDATA%\\pcmem\\run``
(the profile's local folder, which Windows gives only its user, SYSTEM and administrators; found through the
system's known-folder call, not the environment), elsewhere in the private 0700 runtime folder
(:mod:`pcmem.owner.address`). The pipe's name carries a digest of the key, so another user cannot even tell it. The
challenge runs on the connection's own thread, so a peer that never answers holds up nobody else, and it is bounded
by :data:`HANDSHAKE_TIMEOUT`. (The pipe keeps Windows' default security descriptor: its owner, SYSTEM and
administrators may read and write, everyone else only read — so no other user can complete the challenge.)

**Where this runs.** Windows chooses it because CPython has no ``AF_UNIX`` there (cpython#77589). Elsewhere it runs
when ``$PCMEM_OWNER_TRANSPORT=pipe``: the tests run it on Linux over a Unix socket, through the same
``Listener``/``Client`` calls, the same ``Connection`` framing, the same challenge and the same adapter; only the
named pipe beneath (``PipeListener``, ``PipeConnection``) is Windows' alone. The peer's pid and uid are not asked
(the key stands for the uid; the owner's pid comes in its greeting), and no stopped state is watched on Windows
(:mod:`pcmem.owner.processes`).

Standard library only, like the rest of the client side (``multiprocessing.connection`` is imported when first
used).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcmem import private_files, system
from pcmem.owner import address
from pcmem.owner.address import FileIdentity, Places
from pcmem.owner.connections import NotYoursError, Peer, path_limit

if TYPE_CHECKING:
    from multiprocessing.connection import Connection as MessageConnection
    from multiprocessing.connection import Listener

KEY_NAME = "owner.key"
KEY_BYTES = 32
#: Seconds each step of the challenge may take (the other side answers from a thread of its own at once).
HANDSHAKE_TIMEOUT = 10.0
#: Seconds between two looks at a connection's "shut down" mark while it waits for a message with no timeout (a
#: pipe has no shutdown() that wakes a reader: the owner's stop marks its connections instead).
WAKE_EVERY = 0.25
_CHALLENGE = b"pcmem-owner-key-1:"
_NONCE_BYTES = 32


def family() -> str:
    """The listener family: ``AF_PIPE`` on Windows, ``AF_UNIX`` where the system has it; OSError where neither
    exists (a system pcmem's owners cannot meet on: each process then uses its stores alone)."""
    if sys.platform == "win32":
        return "AF_PIPE"
    if hasattr(socket, "AF_UNIX"):
        return "AF_UNIX"
    raise OSError("this system has neither named pipes nor Unix sockets: stores are not shared between processes")


def key_folder() -> Path:
    """Where the key is: ``%LOCALAPPDATA%\\pcmem\\run`` on Windows, the private runtime folder elsewhere. Made when
    missing. Raises OSError (UnsafeRuntimeFolderError where a runtime folder cannot be used)."""
    if system.KIND != "windows":
        return address.runtime_folder()
    import platformdirs

    folder = Path(platformdirs.user_data_dir("pcmem", appauthor=False, roaming=False)) / "run"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def user_key(folder: Path) -> bytes:
    """The user's key in ``folder``, made (32 random bytes, readable by the user alone) when there is none yet. Two
    processes making it at once agree on one: each writes its own file and links it into place, and the one that
    finds a key there already reads that one. Raises OSError."""
    path = folder / KEY_NAME
    for _ in range(3):
        with contextlib.suppress(FileNotFoundError):
            return _read_key(path)
        _make_key(path)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise OSError(f"{path} is not a pcmem key ({len(key)} bytes, not {KEY_BYTES}): remove it, and restart "
                      "the pcmem processes that use stores")
    return key


def _make_key(path: Path) -> None:
    staged = path.with_name(f".{KEY_NAME}.{os.getpid()}.{os.urandom(4).hex()}")
    descriptor = private_files.open_private(staged, os.O_WRONLY)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(os.urandom(KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            if system.KIND == "windows":
                os.rename(staged, path)  # Windows' rename never replaces a file
            else:
                os.link(staged, path)  # fails, instead of replacing, when another process made one first
        except FileExistsError:
            pass
    finally:
        with contextlib.suppress(OSError):
            staged.unlink()


@functools.cache
def _key_in(folder: Path) -> bytes:
    return user_key(folder)


def _mac(key: bytes, side: bytes, nonce: bytes) -> bytes:
    return hmac.new(key, side + nonce, hashlib.sha256).digest()


class PipeTransport:
    """:mod:`multiprocessing.connection` with the user's key (see the module docstring)."""

    name = "pipe"

    def places(self, identity: FileIdentity, *, create: bool) -> Places:
        try:
            chosen = family()
            folder = key_folder()
            key = _key_in(folder) if create or (folder / KEY_NAME).exists() else None
        except OSError as unusable:
            return Places(refused=[str(unusable)])
        if key is None:
            return Places()  # no key yet: no owner of this user ever listened
        name = f"{identity.device:x}-{identity.inode:x}"
        if chosen == "AF_PIPE":
            tag = hashlib.sha256(key).hexdigest()[:16]
            return Places([Path(rf"\\.\pipe\pcmem-{tag}-{name}")])
        where = folder / f"{name}.pipe.sock"
        if len(os.fsencode(where)) > path_limit():
            return Places(refused=[f"{where} is longer than a Unix socket address holds ({path_limit()} bytes)"])
        return Places([where])

    def listen(self, where: Path) -> PipeListening:
        from multiprocessing.connection import Listener

        chosen = family()
        if chosen == "AF_UNIX":
            with contextlib.suppress(FileNotFoundError):
                where.unlink()  # a killed owner's: the caller holds the store file, so whoever made it is gone
        listener = Listener(str(where), family=chosen, backlog=64)
        if chosen == "AF_UNIX":
            os.chmod(where, address.SOCKET_MODE)
        return PipeListening(listener, str(where), chosen)

    def connect(self, where: Path, timeout: float) -> MessageStream:
        from multiprocessing.connection import Client

        stream = MessageStream(Client(str(where), family=family()))
        try:
            _prove_to_owner(stream.messages, _key_in(key_folder()), timeout, where)
        except BaseException:
            stream.close()
            raise
        return stream

    def admit(self, connection: Any) -> Peer:
        if not isinstance(connection, MessageStream):
            raise NotYoursError("a connection of another transport")
        _challenge_client(connection.messages, _key_in(key_folder()))
        return Peer(None, None)

    def peer(self, connection: Any) -> Peer:
        return Peer(None, None)  # the key stands for the user (see the module docstring)

    def older_places(self, identity: FileIdentity) -> list[Path]:
        return []  # no older pcmem listened through a pipe


def _challenge_client(messages: MessageConnection, key: bytes) -> None:
    """The owner's side: the client proves it holds ``key``, then the owner proves it to the client."""
    nonce = os.urandom(_NONCE_BYTES)
    messages.send_bytes(_CHALLENGE + nonce)
    answer = _receive(messages, HANDSHAKE_TIMEOUT)
    proof, theirs = answer[:32], answer[32:]
    if len(theirs) != _NONCE_BYTES or not hmac.compare_digest(proof, _mac(key, b"client", nonce)):
        raise NotYoursError("a connection that does not hold your key: refusing it")
    messages.send_bytes(_mac(key, b"owner", theirs))


def _prove_to_owner(messages: MessageConnection, key: bytes, timeout: float, where: Path) -> None:
    """The client's side of :func:`_challenge_client`."""
    challenge = _receive(messages, timeout)
    if not challenge.startswith(_CHALLENGE) or len(challenge) != len(_CHALLENGE) + _NONCE_BYTES:
        raise NotYoursError(f"{where} does not speak pcmem's key challenge: refusing it")
    mine = os.urandom(_NONCE_BYTES)
    messages.send_bytes(_mac(key, b"client", challenge[len(_CHALLENGE):]) + mine)
    try:
        reply = _receive(messages, timeout)
    except ConnectionResetError:
        raise NotYoursError(f"the owner at {where} does not accept your key (was {KEY_NAME} replaced while it "
                            "ran? restart it)") from None
    if not hmac.compare_digest(reply, _mac(key, b"owner", mine)):
        raise NotYoursError(f"{where} is served by a process that does not hold your key: refusing it")


def _receive(messages: MessageConnection, timeout: float) -> bytes:
    if not messages.poll(timeout):
        raise TimeoutError(f"no answer within {timeout:g} s")
    try:
        return messages.recv_bytes(256)
    except EOFError:
        raise ConnectionResetError("closed by the other side") from None


class MessageStream:
    """A :mod:`multiprocessing.connection` connection as the socket-like :class:`pcmem.owner.transport.Connection`:
    its messages carry the frames' bytes (any cut: a reader keeps what a ``recv`` did not take)."""

    def __init__(self, messages: MessageConnection) -> None:
        self.messages = messages
        self._pending = b""
        self._timeout: float | None = None
        self._shut = False

    def settimeout(self, value: float | None) -> None:
        self._timeout = value

    def recv(self, count: int) -> bytes:
        if not self._pending:
            if not self._wait():
                raise TimeoutError("timed out")
            if self._shut:
                return b""
            try:
                self._pending = self.messages.recv_bytes()
            except EOFError:
                return b""
        data, self._pending = self._pending[:count], self._pending[count:]
        return data

    def _wait(self) -> bool:
        """Whether a message (or the shut-down mark) came within the timeout."""
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while not self._shut:
            left = WAKE_EVERY if deadline is None else min(WAKE_EVERY, max(0.0, deadline - time.monotonic()))
            if self.messages.poll(left):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def sendall(self, data: bytes) -> None:
        self.messages.send_bytes(data)

    def send(self, data: bytes | memoryview) -> int:
        self.messages.send_bytes(data)
        return len(data)

    def shutdown(self, how: int) -> None:
        if how in (socket.SHUT_RD, socket.SHUT_RDWR):
            self._shut = True  # a reader waiting returns "closed" within WAKE_EVERY

    def close(self) -> None:
        self._shut = True
        self.messages.close()


class PipeListening:
    """A :class:`multiprocessing.connection.Listener`. Its ``accept`` cannot be woken by closing it (on Windows the
    pipe instance it waits on is no longer in the listener's hands), so :meth:`close` connects once to wake it."""

    def __init__(self, listener: Listener, where: str, chosen: str) -> None:
        self._listener, self._where, self._family = listener, where, chosen
        self._closing = threading.Event()

    def accept(self) -> MessageStream:
        messages = self._listener.accept()
        if self._closing.is_set():
            messages.close()
            raise OSError("the listener is closed")
        return MessageStream(messages)

    def close(self) -> None:
        from multiprocessing.connection import Client

        if self._closing.is_set():
            return
        self._closing.set()
        with contextlib.suppress(OSError):
            Client(self._where, family=self._family).close()  # wakes accept(), which sees the mark and stops
        self._listener.close()  # on a Unix socket, also removes its file


@functools.cache
def transport() -> PipeTransport:
    return PipeTransport()
