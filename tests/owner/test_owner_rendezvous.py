"""Processes of one user find a store's owner from the file and the account alone (#39, item 1): whatever their
environment (a terminal's ``XDG_RUNTIME_DIR``, cron's or ``env -i``'s nothing, an MCP host's scrubbed one), whatever
another user put in ``/tmp``, however long the path; and a holder that does not answer is named for what it is.

Real processes, real sockets. Where a test needs the account to look otherwise (its home unusable or at a long path,
its fallback folder somewhere a test may squat), each process runs :data:`ACCOUNT` first, which replaces only that
part of :mod:`pcmem.owner.address`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import pcmem

#: Holds the store: says "ready PID", serves until stdin closes.
HOLDER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    runtime.memory.for_scope("p").remember("held")
    print("ready", type(runtime).__name__, flush=True)
    sys.stdin.read()
"""

#: Opens the store and says what it became: "ClientRuntime <owner pid> <head revision>".
PROBE = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None, lock_timeout=5) as runtime:
    print(type(runtime).__name__, runtime.owner_pid, runtime.memory.for_scope("p").head().revision, flush=True)
"""

#: Run first by a process when the test makes the account look otherwise (argv[2]: JSON {"home", "fallback"}).
ACCOUNT = r"""
import json, sys
from pathlib import Path
from pcmem.owner import address
_account = json.loads(sys.argv.pop(2))
if "home" in _account:
    address._account_home = lambda uid: None if _account["home"] is None else Path(_account["home"])
if "fallback" in _account:
    _folders = address.folders
    address.folders = lambda: [*_folders()[:-1], Path(_account["fallback"])]
"""


def run(program: str, path: Path, *, account: dict | None = None, env: dict[str, str] | None = None,
        stdin: int | None = None) -> subprocess.Popen[str]:
    args = [sys.executable, "-c", (ACCOUNT if account is not None else "") + program, str(path)]
    if account is not None:
        args.append(json.dumps(account))
    return subprocess.Popen(args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ if env is None else env)


def hold(path: Path, **kwargs: object) -> subprocess.Popen[str]:
    owner = run(HOLDER, path, stdin=subprocess.PIPE, **kwargs)  # type: ignore[arg-type]
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line == "ready SyncRuntime\n", owner.stderr.read() if owner.stderr else line
    return owner


def release(owner: subprocess.Popen[str]) -> str:
    _, err = owner.communicate(timeout=60)
    assert owner.returncode == 0, err
    return err


def probe(path: Path, **kwargs: object) -> list[str]:
    done = run(PROBE, path, **kwargs)  # type: ignore[arg-type]
    out, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    return out.split()


def test_processes_started_in_different_environments_find_one_owner(tmp_path):
    path = tmp_path / "store.duckdb"
    session = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "session-run"), "TMPDIR": str(tmp_path)}
    (tmp_path / "session-run").mkdir(mode=0o700)
    owner = hold(path, env=session)
    try:
        expected = ["ClientRuntime", str(owner.pid), "1"]
        assert probe(path, env={}) == expected  # env -i, cron
        scrubbed = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "XDG_RUNTIME_DIR": str(tmp_path)}
        assert probe(path, env=scrubbed) == expected  # another runtime folder, another $HOME
        listed = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "list", "-s", "p", "--json"],
                                capture_output=True, text=True, timeout=120, env={})
        assert listed.returncode == 0 and '"held"' in listed.stdout, listed.stderr
    finally:
        release(owner)


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder another user's needs root")
def test_another_user_squatting_the_temporary_folder_changes_nothing(tmp_path):
    """``/tmp/pcmem-<uid>`` taken by another user (a folder, a symlink, a file) is not where the owner listens: the
    account's home is, which nobody else can write. An account without a usable home listens in that folder, and
    when it is squatted the owner says once why it serves no one and a client's error says the same."""
    squat = Path(tempfile.mkdtemp(prefix="squat", dir="/tmp"))
    try:
        elsewhere = squat / "theirs"
        elsewhere.mkdir()
        os.chown(elsewhere, 65534, 65534)
        fallback = squat / f"pcmem-{os.getuid()}"
        for taken in ("folder", "symlink", "file"):
            if taken == "folder":
                fallback.mkdir(mode=0o755)
                os.chown(fallback, 65534, 65534)
            elif taken == "symlink":
                fallback.symlink_to(elsewhere)
            else:
                fallback.write_text("")
            account = {"fallback": str(fallback)}
            path = tmp_path / f"{taken}.duckdb"
            owner = hold(path, account=account, env={"TMPDIR": str(squat)})
            try:
                assert probe(path, account=account, env={"TMPDIR": str(squat)}) == ["ClientRuntime", str(owner.pid),
                                                                                     "1"], taken
            finally:
                release(owner)
            if fallback.is_dir() and not fallback.is_symlink():
                fallback.rmdir()
            else:
                fallback.unlink()

        # No usable home: the fallback folder is the place, made 0700 ...
        homeless = {"home": None, "fallback": str(fallback)}
        path = tmp_path / "homeless.duckdb"
        owner = hold(path, account=homeless)
        try:
            assert probe(path, account=homeless) == ["ClientRuntime", str(owner.pid), "1"]
            assert any(fallback.glob("*.sock")) and oct(fallback.stat().st_mode & 0o777) == "0o700"
        finally:
            release(owner)
        # ... and squatted, nobody can meet: the owner says so once, and a client names the holder and the reason.
        fallback.rmdir()
        fallback.mkdir(mode=0o755)
        os.chown(fallback, 65534, 65534)
        path = tmp_path / "squatted.duckdb"
        owner = hold(path, account=homeless)
        try:
            refused = run(PROBE, path, account=homeless)
            _, err = refused.communicate(timeout=120)
            assert refused.returncode == 1 and "StoreLockedError" in err
            assert f"process {owner.pid} (" in err and "belongs to uid 65534" in err
        finally:
            warned = release(owner)
        assert "is not served to other processes" in warned and "belongs to uid 65534" in warned
    finally:
        shutil.rmtree(squat, ignore_errors=True)


def test_a_socket_path_longer_than_a_unix_address_still_works(tmp_path):
    """A home (or any folder) deep enough that ``<folder>/<name>.sock`` is over 108 bytes: the owner binds and the
    client connects through the folder's descriptor; no "AF_UNIX path too long"."""
    from pcmem.owner import transport

    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 5)
    deep.mkdir(parents=True, mode=0o700)
    where = deep / "feed-f00d.sock"
    assert len(os.fsencode(where)) > transport.PATH_LIMIT
    listener = transport.current().listen(where)
    try:
        client = transport.current().connect(where, timeout=5)
        served, _ = listener.accept()
        client.sendall(b"ping")
        assert served.recv(4) == b"ping"
        assert transport.current().peer(client) == transport.Peer(os.getpid(), os.getuid())
        client.close()
        served.close()
        assert oct(where.stat().st_mode & 0o777) == "0o600"
    finally:
        listener.close()

    path = tmp_path / "store.duckdb"
    account = {"home": str(deep)}
    owner = hold(path, account=account)
    try:
        assert probe(path, account=account) == ["ClientRuntime", str(owner.pid), "1"]
        sockets = list((deep / ".cache" / "pcmem" / "run").glob("*.sock"))
        assert len(sockets) == 1 and len(os.fsencode(sockets[0])) > transport.PATH_LIMIT
    finally:
        release(owner)


#: Holds the file with DuckDB itself (no pcmem owner): the marker in its command line must appear in the error.
DUCKDB_HOLDER = r"""
import sys, duckdb
connection = duckdb.connect(sys.argv[1])
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_holder_that_does_not_serve_the_store_is_named_for_what_it_is(tmp_path):
    path = tmp_path / "store.duckdb"
    pcmem.open(path, embedder=None).close()
    program = tmp_path / "holds-the-file-itself.py"
    program.write_text(DUCKDB_HOLDER)
    holder = subprocess.Popen([sys.executable, str(program), str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        with pytest.raises(pcmem.StoreLockedError) as locked:
            pcmem.open(path, embedder=None, lock_timeout=0.5)
        message = str(locked.value)
        assert f"process {holder.pid} (" in message and "holds-the-file-itself" in message
        assert "does not answer where pcmem owners listen" in message and "older pcmem" not in message
    finally:
        holder.communicate(timeout=60)


#: An owner of an older pcmem: holds the file and listens where pcmem listened before (``$XDG_RUNTIME_DIR/pcmem``),
#: answering the hello as protocol 1 did (a stand-in: the test is about what the newer client says of it).
OLDER_OWNER = r"""
import json, os, socket, struct, sys, duckdb
connection = duckdb.connect(sys.argv[1])
folder = os.path.join(os.environ["XDG_RUNTIME_DIR"], "pcmem")
os.makedirs(folder, mode=0o700, exist_ok=True)
info = os.stat(sys.argv[1])
listener = socket.socket(socket.AF_UNIX)
listener.bind(os.path.join(folder, f"{info.st_dev:x}-{info.st_ino:x}.sock"))
listener.listen()
print("ready", flush=True)
while True:
    client, _ = listener.accept()
    length = struct.unpack(">I", client.recv(4))[0]
    hello = json.loads(client.recv(length))
    answer = {"pcmem": 1, "identity": hello.get("identity"), "pid": os.getpid()} if hello.get("pcmem") == 1 else {
        "error": {"type": "StoreLockedError", "fields": {},
                  "message": f"the owner refused: protocol version {hello.get('pcmem')}, this side speaks 1"}}
    data = json.dumps(answer).encode()
    client.sendall(struct.pack(">I", len(data)) + data)
    client.close()
"""


def test_an_older_pcmem_that_holds_the_store_is_named_as_one(tmp_path):
    path = tmp_path / "store.duckdb"
    pcmem.open(path, embedder=None).close()
    run_folder = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))  # short: the older pcmem had no long-path way
    env = {**os.environ, "XDG_RUNTIME_DIR": str(run_folder)}
    older = subprocess.Popen([sys.executable, "-c", OLDER_OWNER, str(path)], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert older.stdout is not None and older.stdout.readline() == "ready\n"
        refused = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True,
                                 timeout=120, env=env)
        assert refused.returncode == 1
        assert f"process {older.pid} (" in refused.stderr and "an older pcmem" in refused.stderr
        assert str(run_folder / "pcmem") in refused.stderr and "this side speaks 1" in refused.stderr
    finally:
        older.kill()
        older.wait(timeout=60)
        shutil.rmtree(run_folder, ignore_errors=True)


def test_the_peer_of_a_connection_is_known(tmp_path):
    """The owner's and the client's check of who is at the other end (SO_PEERCRED on Linux)."""
    from pcmem.owner import address, transport

    if not sys.platform.startswith("linux"):
        pytest.skip("SO_PEERCRED is Linux's")
    left, right = socket.socketpair(socket.AF_UNIX)
    try:
        assert transport.current().peer(left) == transport.Peer(os.getpid(), os.getuid())
        raw = left.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        assert struct.unpack("3i", raw)[1] == os.getuid()
    finally:
        left.close()
        right.close()
    identity = address.FileIdentity(1, 2)
    assert [p.name for p in address.places(identity, create=False).addresses] == ["1-2.sock"] * len(address.folders())
