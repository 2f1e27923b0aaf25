"""One validation, everywhere (#38 item 5): a value the library refuses is refused with the same error type and
message by a client of another process's store (before it sends anything) and by that owner's socket (a raw frame,
as any other program could send it), and nothing is written.

Before: ``revise(expected_version=True)`` through a client was applied as version 1, ``limit=True`` / ``'1'`` were
accepted and ``expected_version='1'`` coerced — the client serialised with pydantic and the owner decoded in
pydantic's lax mode. Now both run :func:`pcmem.memory.arguments.canonical`, the library methods' own check.
"""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pcmem
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.memory.service import SyncMemoryService
from pcmem.owner import address, protocol
from pcmem.owner.dial import handshake

OWNER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    runtime.memory.for_scope("v").remember("Lisbon", entry_id="city")
    print("ready", flush=True)
    sys.stdin.read()
"""

#: (operation, positional arguments, keywords): each one value the library refuses with an InputError.
BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("scope.revise", ("city",), {"text": "Braga", "expected_version": True}),
    ("scope.revise", ("city",), {"text": "Braga", "expected_version": "1"}),
    ("scope.revise", ("city",), {"text": "Braga", "expected_version": 1.0}),
    ("scope.revise", ("city",), {"text": "Braga", "expected_version": 0}),
    ("scope.revise", ("city",), {"text": "Braga", "expected_revision": True}),
    ("scope.revise", ("city",), {"text": "Braga", "expected_revision": -1}),
    ("scope.revise", ("city",), {"text": "Braga"}),
    ("scope.revise", ("city",), {"text": "  ", "expected_version": 1}),
    ("scope.revise", ("city",), {"text": b"Braga", "expected_version": 1}),
    ("scope.revise", ("city",), {"text": "Braga", "kind": 5, "expected_version": 1}),
    ("scope.revise", ("city",), {"text": "Braga", "metadata": "x", "expected_version": 1}),
    ("scope.revise", ("city",), {"text": "Braga", "reason": 7, "expected_version": 1}),
    ("scope.revise", (42,), {"text": "Braga", "expected_version": 1}),
    ("scope.revise", ("not an id",), {"text": "Braga", "expected_version": 1}),
    ("scope.revise", ("city",), {"text": "Braga", "expected_version": 1, "idempotency_key": "has space"}),
    ("scope.revise", ("city",), {"text": "Braga", "expected_version": 1, "idempotency_key": 5}),
    ("scope.retire", ("city",), {"expected_version": True}),
    ("scope.retire", ("city",), {"expected_revision": "1"}),
    ("scope.reactivate", ("city",), {"expected_version": False}),
    ("scope.remember", ("Porto",), {"upsert": "yes"}),
    ("scope.remember", ("Porto",), {"allow_duplicates": 1}),
    ("scope.remember", ("Porto",), {"expected_revision": "1"}),
    ("scope.remember", ("Porto",), {"entry_id": "has space"}),
    ("scope.remember", ("Porto",), {"entry_id": "k~2"}),  # a reserved id: refused inside the write
    ("scope.remember", ("Porto",), {"metadata": {"a": [[[[[[[[[1]]]]]]]]]}}),
    ("scope.remember", ("",), {}),
    ("scope.remember", (b"Porto",), {}),
    ("scope.remember", ("Porto",), {"idempotency_key": ""}),
    ("scope.forget", (5,), {}),
    ("scope.forget", ("has space",), {}),
    ("scope.forget_scope", (), {"idempotency_key": True}),
    ("scope.list", (), {"limit": True}),
    ("scope.list", (), {"limit": "1"}),
    ("scope.list", (), {"limit": 0}),
    ("scope.list", (), {"state": "bogus"}),
    ("scope.list", (), {"revision": True}),
    ("scope.changes", (True,), {}),
    ("scope.changes", (0,), {"limit": "5"}),
    ("scope.get_entry", ("city",), {"revision": True}),
    ("scope.get_entry", (5,), {}),
    ("scope.history", (5,), {}),
    ("scope.tombstone", (5,), {}),
    ("scope.search", ("Lisbon",), {"limit": True}),
    ("scope.search", ("Lisbon",), {"limit": "5"}),
    ("scope.search", ("Lisbon",), {"mode": "bogus"}),
    ("scope.search", ("Lisbon",), {"kinds": "fact"}),
    ("scope.search", ("",), {}),
    ("store.search", ("Lisbon",), {"scopes": "v"}),
    ("store.search", ("Lisbon",), {"scopes": ["v", "v"]}),
    ("store.forget_scope", (5,), {}),
    ("store.set_search_fusion", ("bogus",), {}),
    ("store.set_search_fusion", (True,), {}),
]


@pytest.fixture(scope="module")
def surfaces() -> Iterator[dict[str, Any]]:
    """The three ways to make a call: the library on a store of its own, a client of an owner process, and that
    owner's socket directly. Module-wide: one owner for every case (each case writes nothing, which is checked)."""
    folder = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))
    work = Path(tempfile.mkdtemp())
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_RUNTIME_DIR", str(folder))
    path = work / "owned.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().startswith("ready"), owner.stderr
        library = pcmem.open(work / "library.duckdb", embedder=None)
        library.memory.for_scope("v").remember("Lisbon", entry_id="city")
        client = pcmem.open(path, embedder=None)
        assert type(client).__name__ == "ClientRuntime" and type(library).__name__ == "SyncRuntime"
        identity = address.FileIdentity.of(path)
        assert identity is not None
        connection, _ = handshake(address.socket_path(identity), identity.as_json())
        yield {"library": library, "client": client, "socket": connection}
        connection.close()
        client.close()
        library.close()
    finally:
        if owner.stdin is not None:
            owner.stdin.close()
        owner.wait(timeout=60)
        patch.undo()
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def _call(runtime: Any, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    on, _, name = key.partition(".")
    target = runtime.memory.for_scope("v") if on == "scope" else runtime.memory
    try:
        getattr(target, name)(*args, **kwargs)
    except pcmem.PcmemError as error:
        return type(error).__name__, str(error)
    raise AssertionError(f"{key}{args}{kwargs} was accepted")


def _frame(connection: Any, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    """The call as a raw frame: its arguments by parameter name, as JSON carries them (no client checked them)."""
    on, _, name = key.partition(".")
    method = getattr(SyncScopedMemory if on == "scope" else SyncMemoryService, name)
    bound = inspect.signature(method).bind(None, *args, **kwargs).arguments
    bound.pop("self")
    protocol.send_frame(connection, {"op": key, "scope": "v" if on == "scope" else None, "args": bound,
                                     "rerank": None})
    answer = protocol.recv_frame(connection)
    assert "error" in answer, f"{key}{args}{kwargs} was accepted by the owner: {answer}"
    return answer["error"]["type"], answer["error"]["message"]


@pytest.mark.parametrize(("key", "args", "kwargs"), BAD_CALLS, ids=[f"{k}-{i}" for i, (k, _, _) in
                                                                       enumerate(BAD_CALLS)])
def test_a_bad_value_gets_the_same_error_from_the_library_a_client_and_the_owners_socket(surfaces, key, args,
                                                                                          kwargs):
    expected = _call(surfaces["library"], key, args, kwargs)
    assert _call(surfaces["client"], key, args, kwargs) == expected
    if not any(isinstance(value, bytes) for value in (*args, *kwargs.values())):  # JSON cannot carry bytes
        assert _frame(surfaces["socket"], key, args, kwargs) == expected


def test_nothing_was_written_by_the_refused_calls(surfaces):
    """Runs after the table (module order): the owner's store still holds only what it wrote at start."""
    memory = surfaces["client"].memory
    assert [(s.scope, s.head_revision) for s in memory.scopes()] == [("v", 1)]
    assert memory.search_fusion().store_default is None


def test_a_client_refuses_before_sending(surfaces, monkeypatch):
    """The client's own check refuses: the bad call never reaches the owner."""
    from pcmem.owner import client

    sent: list[dict[str, Any]] = []
    real = client.SocketLink.call
    monkeypatch.setattr(client.SocketLink, "call", lambda self, request: sent.append(request) or real(self, request))
    scope = surfaces["client"].memory.for_scope("v")
    with pytest.raises(pcmem.InputError, match="expected_version must be a non-negative integer, got True"):
        scope.revise("city", text="Braga", expected_version=True)
    assert sent == []
    assert scope.head().revision == 1  # and a good call still goes
    assert [request["op"] for request in sent] == ["scope.head"]


def test_the_owner_refuses_a_frame_whose_arguments_are_not_an_object(surfaces):
    for args in ("x", [1, 2], 5):
        protocol.send_frame(surfaces["socket"], {"op": "scope.revise", "scope": "v", "args": args, "rerank": None})
        answer = protocol.recv_frame(surfaces["socket"])
        assert answer["error"]["type"] == "InputError", answer
        assert answer["error"]["message"].startswith("the arguments of revise must be a JSON object")
    protocol.send_frame(surfaces["socket"], {"op": "scope.head", "scope": 5, "args": {}, "rerank": None})
    assert protocol.recv_frame(surfaces["socket"])["error"]["message"] == "scope must be a string, got int"
