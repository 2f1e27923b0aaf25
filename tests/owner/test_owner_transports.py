"""The owner transport through each implementation it has (#41): the Unix socket (Linux, macOS) and the authenticated
pipe (Windows' named pipe; here, on Linux, ``multiprocessing.connection`` over a Unix socket, chosen with
``$PCMEM_OWNER_TRANSPORT=pipe``). One contract for both, then what only the pipe has (its key), then a store shared by
real processes through each, its owner killed and taken over.

Real sockets, real processes; the pipe's named-pipe layer (``PipeListener``) is Windows' alone and is not run here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Client, Listener
from pathlib import Path

import pytest
from store_processes import HOLDER

from pcmem.owner import pipes, protocol
from pcmem.owner.address import FileIdentity
from pcmem.owner.transport import NotYoursError, Peer, Transport, current

TRANSPORTS = ("unix", "pipe")


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Transport:
    monkeypatch.setenv("PCMEM_OWNER_TRANSPORT", request.param)
    chosen = current()
    assert chosen.name == request.param
    return chosen


def listening(transport: Transport) -> tuple[Path, object]:
    """A listener of ``transport`` at the place it gives a file identity no store has."""
    identity = FileIdentity(0xFEED, int.from_bytes(os.urandom(6), "big"))
    where = transport.places(identity, create=True).addresses[0]
    return where, transport.listen(where)


def test_frames_cross_both_ways_between_this_users_processes(transport: Transport) -> None:
    where, listener = listening(transport)
    served: dict[str, object] = {}

    def owner() -> None:
        connection = listener.accept()
        served["peer"] = transport.admit(connection)
        served["hello"] = protocol.recv_frame(connection)
        protocol.send_frame(connection, {"answer": "hello back", "big": "x" * 300_000})
        connection.close()

    thread = threading.Thread(target=owner)
    thread.start()
    try:
        client = transport.connect(where, timeout=5)
        protocol.send_frame(client, {"hello": "from the client"})
        answer = protocol.recv_frame(client)
        client.close()
    finally:
        thread.join(30)
        listener.close()
    assert answer == {"answer": "hello back", "big": "x" * 300_000}
    assert served["hello"] == {"hello": "from the client"}
    expected = Peer(os.getpid(), os.getuid()) if transport.name == "unix" else Peer(None, None)
    assert served["peer"] == expected  # the pipe's check is the key, not the uid


def test_closing_a_listener_wakes_its_accept_and_takes_its_address_away(transport: Transport) -> None:
    where, listener = listening(transport)
    ended: list[BaseException] = []

    def accept() -> None:
        try:
            listener.accept()
        except OSError as error:
            ended.append(error)

    thread = threading.Thread(target=accept)
    thread.start()
    listener.close()
    thread.join(30)
    assert not thread.is_alive() and len(ended) == 1
    assert not where.exists()
    with pytest.raises(OSError):
        transport.connect(where, timeout=1)


def test_a_wait_ends_at_its_timeout_and_a_shutdown_ends_a_reader(transport: Transport) -> None:
    where, listener = listening(transport)
    accepted: list[object] = []

    def owner() -> None:
        connection = listener.accept()
        transport.admit(connection)
        accepted.append(connection)

    thread = threading.Thread(target=owner)
    thread.start()
    client = transport.connect(where, timeout=5)
    thread.join(30)
    served = accepted[0]
    try:
        client.settimeout(0.05)
        with pytest.raises(TimeoutError):
            client.recv(4)  # nothing was sent: the wait ends, the connection stays usable
        read: list[bytes] = []
        reader = threading.Thread(target=lambda: read.append(served.recv(4)))  # type: ignore[attr-defined]
        reader.start()
        served.shutdown(socket.SHUT_RD)  # type: ignore[attr-defined]
        reader.join(30)
        assert read == [b""], "a reader woken by the owner's stop sees the connection end"
        client.settimeout(None)
    finally:
        client.close()
        served.close()  # type: ignore[attr-defined]
        listener.close()


def test_the_pipe_admits_only_a_client_that_holds_the_users_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PCMEM_OWNER_TRANSPORT", "pipe")
    transport = current()
    where, listener = listening(transport)
    refused: list[BaseException] = []

    def owner() -> None:
        connection = listener.accept()
        try:
            transport.admit(connection)
        except NotYoursError as error:
            refused.append(error)
        connection.close()

    thread = threading.Thread(target=owner)
    thread.start()
    try:
        impostor = Client(str(where), family="AF_UNIX")
        with pytest.raises(NotYoursError, match="does not accept your key"):
            pipes._prove_to_owner(impostor, os.urandom(pipes.KEY_BYTES), 5, where)
        impostor.close()
    finally:
        thread.join(30)
        listener.close()
    assert len(refused) == 1 and "does not hold your key" in str(refused[0])


def test_a_pipe_client_refuses_an_owner_without_the_users_key(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """A process that listens first at the owner's address cannot pass for the owner: the challenge is both ways."""
    monkeypatch.setenv("PCMEM_OWNER_TRANSPORT", "pipe")
    where = tmp_path / "squat.sock"
    squatter = Listener(str(where), family="AF_UNIX")

    def answer_without_the_key() -> None:
        connection = squatter.accept()
        try:
            pipes._challenge_client(connection, os.urandom(pipes.KEY_BYTES))
        except NotYoursError:
            pass
        connection.close()

    thread = threading.Thread(target=answer_without_the_key)
    thread.start()
    try:
        with pytest.raises(NotYoursError):
            current().connect(where, timeout=5)
    finally:
        thread.join(30)
        squatter.close()


MAKE_KEY = "import sys; from pathlib import Path; from pcmem.owner import pipes; " \
           "print(pipes.user_key(Path(sys.argv[1])).hex())"


def test_the_key_is_made_once_for_every_process_and_only_the_user_reads_it(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    racers = [subprocess.Popen([sys.executable, "-c", MAKE_KEY, str(folder)], stdout=subprocess.PIPE, text=True)
              for _ in range(4)]
    keys = {racer.communicate(timeout=120)[0].strip() for racer in racers}
    assert len(keys) == 1 and len(bytes.fromhex(keys.pop())) == pipes.KEY_BYTES
    key = folder / pipes.KEY_NAME
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert sorted(path.name for path in folder.iterdir()) == [pipes.KEY_NAME], "no staged key left behind"


#: A client that writes, waits for a line (the test kills the owner meanwhile), then writes again: it takes over.
CLIENT = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None, lock_timeout=30) as runtime:
    scope = runtime.memory.for_scope("p")
    print(type(runtime).__name__, runtime.owner_pid, scope.remember("from the client").memory.revision, flush=True)
    sys.stdin.readline()
    print(scope.remember("after the owner died").memory.revision, len(scope.list().entries), flush=True)
"""


@pytest.mark.parametrize("chosen", TRANSPORTS)
def test_a_store_is_shared_and_taken_over_through_each_transport(chosen: str, tmp_path: Path) -> None:
    env = {**os.environ, "PCMEM_OWNER_TRANSPORT": chosen}
    path = tmp_path / "store.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    processes = [owner]
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "ready\n"  # first, or the client would own
        client = subprocess.Popen([sys.executable, "-c", CLIENT, str(path)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        processes.append(client)
        assert client.stdout is not None
        assert client.stdout.readline().split() == ["ClientRuntime", str(owner.pid), "2"]
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(timeout=60)
        out, err = client.communicate("go on\n", timeout=120)
        assert client.returncode == 0, err
        assert out.split() == ["3", "3"], "every acknowledged write is there, and the client writes on"
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=60)
