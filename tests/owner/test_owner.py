"""One store, many processes (#28): the process that holds the file serves every other pcmem process.

Real processes and real sockets: an app holding the store in a subprocess, the CLI beside it, an owner killed with
SIGKILL, typed errors crossing the socket, the private runtime folder. Two `pcmem mcp` hosts: test_owner_mcp.py.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import pcmem
from pcmem.errors import UnsafeRuntimeFolderError
from pcmem.owner import address, protocol

#: An app that holds the store: writes one entry, says "ready", serves until its stdin closes, then prints the
#: texts it sees (so the test knows the owner saw the clients' writes).
OWNER_APP = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    scope = runtime.memory.for_scope("p")
    scope.remember("the owner wrote this kiwi note", entry_id="owner-note", upsert=True)
    print("ready", type(runtime).__name__, flush=True)
    sys.stdin.read()
    print("|".join(sorted(e.entry.text for e in scope.list().entries)), flush=True)
"""


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch):
    """Subprocesses give up on a held store after 5 s (the owner's place does not depend on the environment: it is
    the account's, see test_owner_rendezvous.py)."""
    monkeypatch.setenv("PCMEM_LOCK_TIMEOUT", "5")


def start_owner(path: Path) -> subprocess.Popen[str]:
    owner = subprocess.Popen([sys.executable, "-c", OWNER_APP, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = owner.stdout.readline() if owner.stdout else ""
    assert line.startswith("ready Sync"), owner.stderr.read() if owner.stderr else line
    return owner


def stop_owner(owner: subprocess.Popen[str]) -> str:
    out, err = owner.communicate(timeout=60)
    assert owner.returncode == 0, err
    return out.strip()


def cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), *args], capture_output=True, text=True,
                          timeout=120)


def test_the_cli_works_beside_a_running_owner(tmp_path):
    path = tmp_path / "store.duckdb"
    owner = start_owner(path)
    try:
        written = cli(path, "remember", "-s", "p", "the client wrote this kiwi note", "--json")
        assert written.returncode == 0, written.stderr
        found = cli(path, "search", "-s", "p", "kiwi", "--mode", "fts", "--json")
        assert found.returncode == 0, found.stderr
        page = pcmem.SearchPage.model_validate_json(found.stdout)
        assert sorted(hit.text for hit in page.hits) == ["the client wrote this kiwi note",
                                                         "the owner wrote this kiwi note"]
        listed = cli(path, "list", "-s", "p", "--json")
        assert listed.returncode == 0 and listed.stdout.count("kiwi note") == 2, listed.stderr
        scopes = cli(path, "scopes", "--json")
        assert scopes.returncode == 0 and '"p"' in scopes.stdout, scopes.stderr
    finally:
        seen = stop_owner(owner)
    assert seen == "the client wrote this kiwi note|the owner wrote this kiwi note"  # the owner saw the client's write


def test_a_client_takes_the_file_over_when_its_owner_is_killed(tmp_path):
    path = tmp_path / "store.duckdb"
    owner = start_owner(path)
    runtime = pcmem.open(path, embedder=None)
    try:
        assert isinstance(runtime, pcmem.SyncRuntime) and runtime.owner_pid == owner.pid
        scope = runtime.memory.for_scope("p")
        acknowledged = [scope.remember(f"note {i} before the crash").citations[0] for i in range(5)]
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)
        # The next call notices, takes the file over (this process becomes the owner) and runs: even a plain
        # remember, which is never sent twice, since its request was not written into the dead connection.
        assert scope.remember("the first write after the crash").memory.revision == 7
        assert len(scope.list().entries) == 7
        assert runtime.owner_pid is None
        for citation in acknowledged:
            assert scope.get(citation).entry.text.endswith("before the crash")
        revised = scope.revise(pcmem.ReviseRequest(entry_id=acknowledged[0].entry_id, text="revised after the crash",
                                                   expected_version=1))
        assert revised.citations[0].revision == 8
        # A third process finds the new owner (this one) and sees the same store.
        third = subprocess.run([sys.executable, "-c", "import sys, pcmem\n"
                                "with pcmem.open(sys.argv[1], embedder=None) as r:\n"
                                "    print(type(r).__name__, r.owner_pid, r.memory.for_scope('p').head().revision)",
                                str(path)], capture_output=True, text=True, timeout=120)
        assert third.returncode == 0, third.stderr
        assert third.stdout.split() == ["ClientRuntime", str(os.getpid()), "8"]
    finally:
        runtime.close()
        if owner.poll() is None:
            owner.kill()


def _call_while_owner_dies(owner: subprocess.Popen[str], call) -> object:  # noqa: ANN001
    """Run ``call`` against an owner that is stopped (SIGSTOP: the request is sent, never answered), then kill it."""
    outcome: list[object] = []
    owner.send_signal(signal.SIGSTOP)
    worker = threading.Thread(target=lambda: outcome.append(_outcome(call)))
    worker.start()
    time.sleep(0.5)  # the request is in the socket's buffer by now
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=30)
    worker.join(timeout=60)
    return outcome[0]


def _outcome(call) -> object:  # noqa: ANN001
    try:
        return call()
    except pcmem.PcmemError as error:
        return error


def test_a_write_in_flight_when_the_owner_dies_is_sent_again_and_applied_once(tmp_path):
    path = tmp_path / "store.duckdb"
    owner = start_owner(path)
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("p")
        # A keyed upsert is sent again to the new owner (this process) and succeeds.
        result = _call_while_owner_dies(owner, lambda: scope.remember("keyed", entry_id="k1", upsert=True))
        assert isinstance(result, pcmem.WriteResult) and result.citations[0].entry_id == "k1"
    owner = start_owner(path)
    with pcmem.open(path, embedder=None) as runtime:
        scope = runtime.memory.for_scope("p")
        # So is a plain remember: it carries an idempotency key, so it cannot be applied twice (it was OwnerGoneError,
        # "may or may not have been applied", before every write had one). The store is usable at once.
        result = _call_while_owner_dies(owner, lambda: scope.remember("plain note"))
        assert isinstance(result, pcmem.WriteResult), result
        assert [e.entry.text for e in scope.list().entries].count("plain note") == 1
        assert scope.get_entry("k1").entry.text == "keyed"
        assert scope.remember("after the hand-off").memory.revision >= 3


def test_typed_errors_cross_the_socket(tmp_path):
    path = tmp_path / "store.duckdb"
    owner = start_owner(path)
    alias = tmp_path / "alias.duckdb"
    alias.symlink_to(path)
    try:
        with pcmem.open(alias, embedder=None) as runtime:  # another name of the file finds the same owner
            assert runtime.owner_pid == owner.pid
            scope = runtime.memory.for_scope("p")
            scope.remember("second")
            with pytest.raises(pcmem.RevisionConflictError) as conflict:
                scope.revise(pcmem.ReviseRequest(entry_id="owner-note", text="stale", expected_revision=1))
            assert conflict.value.expected == 1 and conflict.value.actual == 2
            assert str(conflict.value) == "expected revision 1 but the head of scope is 2"
            scope.forget("owner-note")
            with pytest.raises(pcmem.EntryErasedError) as erased:
                scope.get_entry("owner-note")
            assert isinstance(erased.value.tombstone, pcmem.Tombstone)
            assert erased.value.tombstone.entry_id == "owner-note"
            with pytest.raises(pcmem.InputError, match="revise takes a ReviseRequest or a str, not int"):
                scope.revise(42)  # type: ignore[arg-type]
            with pytest.raises(pcmem.InputError, match="entry_id must be"):  # a str is the entry id now
                scope.revise("not an id", text="x", expected_version=1)
            with pytest.raises(pcmem.RevisionNotFoundError):
                scope.list(pcmem.ListRequest(revision=99))
    finally:
        stop_owner(owner)


def test_error_classes_and_their_fields_survive_the_wire():
    sent = pcmem.ConcurrentWriteError("another writer won", expected=3, actual=4)
    received = protocol.decode_error(protocol.encode_error(sent))
    assert type(received) is pcmem.ConcurrentWriteError
    assert (str(received), received.expected, received.actual) == ("another writer won", 3, 4)
    unknown = protocol.decode_error({"type": "NoSuchError", "message": "odd", "fields": {}})
    assert type(unknown) is pcmem.StoreError


def test_the_socket_is_private_and_a_foreign_folder_is_refused(tmp_path):
    path = tmp_path / "store.duckdb"
    with pcmem.open(path, embedder=None):
        identity = address.FileIdentity.of(path)
        assert identity is not None
        sock = address.places(identity, create=False).addresses[0]
        assert stat.S_ISSOCK(os.stat(sock).st_mode) and stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    assert not sock.exists()  # the owner removed it when it closed

    folder = tmp_path / "run"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    with pytest.raises(UnsafeRuntimeFolderError, match="must be 700"):
        address.private_folder(folder, create=False)
    os.chmod(folder, 0o700)
    assert address.private_folder(folder, create=False) == folder
    if os.getuid() != 0:
        pytest.skip("giving the folder to another user needs root")
    os.chown(folder, 65534, 65534)
    with pytest.raises(UnsafeRuntimeFolderError, match="belongs to uid 65534"):
        address.private_folder(folder, create=False)


def test_a_process_that_finds_a_new_store_locked_leaves_it_alone(tmp_path, monkeypatch):
    """Two processes creating one store at once (two MCP hosts starting on a fresh PCMEM_DB): the one that loses
    the lock must not delete the file the winner just made and holds (it would write to an unlinked file)."""
    from pcmem.store.duckdb import DuckDBBackend, files

    path = tmp_path / "store.duckdb"
    owner = start_owner(path)
    try:
        # This process looked just before the owner created the file: it saw no file, then found it locked.
        monkeypatch.setattr(files, "check_path", lambda _path, create: False)
        with pytest.raises(pcmem.StoreLockedError):
            DuckDBBackend(path, lock_timeout=0)
        assert path.exists()
    finally:
        seen = stop_owner(owner)
    assert seen == "the owner wrote this kiwi note"


OWNER_WITH_EMBEDDER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1]) as runtime:  # the bundled embedder: hybrid search and the embedding rerank work
    scope = runtime.memory.for_scope("p")
    scope.remember("The release moves to Friday after the installer check.")
    scope.remember("Priya prefers tea in the afternoon.")
    print("ready SyncRuntime", flush=True)
    sys.stdin.read()
"""

CLIENT_SEARCH = r"""
import sys, pcmem
with pcmem.open(sys.argv[1]) as runtime:
    scope = runtime.memory.for_scope("p")
    page = scope.search("when does the release go out", reranker=runtime.build_reranker("embedding"))
    print(type(runtime).__name__, page.mode, page.rerank.policy_id, page.hits[0].text)
    print(" ".join(m for m in ("onnxruntime", "numpy", "duckdb", "tokenizers") if m in sys.modules) or "none")
"""


def test_a_client_names_the_reranker_and_the_owner_runs_every_model(tmp_path):
    path = tmp_path / "store.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", OWNER_WITH_EMBEDDER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().startswith("ready"), owner.stderr
        done = subprocess.run([sys.executable, "-c", CLIENT_SEARCH, str(path)], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        first, modules = done.stdout.strip().splitlines()
        assert first == ("ClientRuntime hybrid pcmem.memory.rerank.embedding.v1 "
                         "The release moves to Friday after the installer check.")
        assert modules == "none"  # no model, no numpy, no DuckDB in the client: the owner embedded and reranked
    finally:
        stop_owner(owner)


def test_an_owner_sweeps_sockets_that_killed_owners_left_behind(tmp_path):
    """A SIGKILLed owner cannot remove its socket; with one socket per store the folder would only grow. The next
    owner removes the old ones that nobody listens on, and leaves alone a live owner's and a just-bound one."""
    folder = address.private_folder(address.folders()[0], create=True)

    def bound(name: str, *, listening: bool, age: float) -> tuple[Path, socket.socket]:
        path = folder / name
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        if listening:
            sock.listen(1)
        else:
            sock.close()  # what a killed owner leaves: the file, and nobody behind it
        old = time.time() - age
        os.utime(path, (old, old))
        return path, sock

    tag = f"{os.getpid():x}"  # the folder is the account's: other tests' sockets may be there too
    stale, _ = bound(f"{tag}-1.sock", listening=False, age=3600)
    fresh, _ = bound(f"{tag}-2.sock", listening=False, age=0)
    live, live_sock = bound(f"{tag}-3.sock", listening=True, age=3600)
    try:
        with pcmem.open(tmp_path / "store.duckdb", embedder=None):
            pass
        assert not stale.exists()
        assert fresh.exists() and live.exists()
    finally:
        live_sock.close()
        for leftover in (fresh, live):
            leftover.unlink(missing_ok=True)


def test_a_client_sends_the_owner_one_rerank_choice():
    """A client's search says default / none / this reranker with one parameter; the owner is sent a reranker by
    name, or none (its service for clients has no reranker of its own)."""
    from pcmem.owner.client import Caller, RerankChoice
    from pcmem.owner.rerank_spec import RerankSpec

    configured = RerankChoice(RerankSpec(policy="embedding"))
    named = RerankChoice(RerankSpec(policy="listwise"))
    caller = Caller(link=None, relink=lambda: None, default_rerank=configured)  # type: ignore[arg-type]
    assert caller._rerank("default") == configured.spec.model_dump(mode="json")
    assert caller._rerank("none") is None
    assert caller._rerank(named) == named.spec.model_dump(mode="json")
    with pytest.raises(pcmem.InputError, match="got None"):
        caller._rerank(None)


def test_a_client_takes_the_identity_and_keyword_calls_and_the_request_objects(tmp_path):
    """The one calling convention crosses the socket: identity + keywords and request objects give the same."""
    path = tmp_path / "store.duckdb"
    owner = start_owner(path)
    try:
        with pcmem.open(path, embedder=None) as runtime:
            assert type(runtime).__name__ == "ClientRuntime"
            scope = runtime.memory.for_scope("c")
            scope.remember("We deploy on Fridays.", entry_id="deploy", reason="kick-off")
            assert scope.revise("deploy", text="We deploy on Thursdays.", expected_version=1).memory.revision == 2
            scope.retire(pcmem.RetireRequest(entry_id="deploy", expected_version=2))
            scope.reactivate("deploy", expected_revision=3, reason="back")
            assert [e.entry.text for e in scope.list(state="all", limit=5).entries] == ["We deploy on Thursdays."]
            assert scope.get_entry(pcmem.EntryRequest(entry_id="deploy", revision=1)).entry.version == 1
            assert [c.operation for c in scope.changes(pcmem.ChangesRequest(since_revision=2)).changes] == [
                "retire", "reactivate"]
            assert len(scope.history(pcmem.HistoryRequest(entry_id="deploy")).events) == 4
            assert [h.citation.entry_id for h in scope.search("Thursdays", mode="fts", reranker="none").hits] == [
                "deploy"]
            with pytest.raises(pcmem.InputError, match="go into the ListRequest"):
                scope.list(pcmem.ListRequest(), limit=1)
            assert scope.forget(pcmem.ForgetRequest(entry_id="deploy")).memory.revision == 5
    finally:
        stop_owner(owner)
