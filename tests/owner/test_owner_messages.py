"""What an owner and its clients print for what they are sent (issue #38, item 6): a frame that is not JSON is refused
quietly and the owner keeps serving; a warning points at the caller's line, not at pcmem's source. A real owner
process and a real socket."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import pcmem
from pcmem.owner import address, protocol

OWNER_APP = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    runtime.memory.for_scope("p").remember("written by the owner")
    print("ready", flush=True)
    sys.stdin.read()
"""


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))  # short: a Unix socket path has ~100 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _send_raw(path: Path, payload: bytes) -> bytes:
    identity = address.FileIdentity.of(path)
    assert identity is not None
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(str(address.socket_path(identity)))
        connection.sendall(struct.pack(">I", len(payload)) + payload)
        connection.settimeout(30)
        return connection.recv(1 << 16)  # b"": the owner closed the connection


@pytest.mark.parametrize("payload", [b"[" * 100_000, b"{\"a\":" * 100_000, b"\xff\xfe not utf-8", b"[1, 2"],
                         ids=["nested-lists", "nested-objects", "not-utf-8", "cut-json"])
def test_a_frame_that_is_not_json_is_refused_quietly_and_the_owner_keeps_serving(tmp_path, payload):
    path = tmp_path / "s.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", OWNER_APP, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        assert _send_raw(path, payload) == b""
        with pcmem.open(path, embedder=None) as client:  # a client of that owner: it still answers
            assert [e.entry.text for e in client.memory.for_scope("p").list().entries] == ["written by the owner"]
    finally:
        _, stderr = owner.communicate(timeout=60)
    assert owner.returncode == 0
    assert "Traceback" not in stderr and "RecursionError" not in stderr, stderr


def test_the_decoder_turns_any_undecodable_frame_into_a_lost_connection():
    left, right = socket.socketpair()
    with left, right:
        payload = b"[" * 100_000
        left.sendall(struct.pack(">I", len(payload)) + payload)
        with pytest.raises(protocol.ConnectionLost, match="not JSON"):
            protocol.recv_frame(right)


def test_a_client_refuses_the_removed_rerank_knobs_as_the_library_does(tmp_path):
    """Through an owner's client, the removed spellings are refused as in one process: before anything is sent."""
    path = tmp_path / "s.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", OWNER_APP, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        with pcmem.open(path, embedder=None) as client:
            assert client.owner_pid is not None
            scope = client.memory.for_scope("p")
            with pytest.raises(pcmem.InputError, match="got None"):
                scope.search("owner", reranker=None)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="rerank"):
                scope.search("owner", rerank=False)  # type: ignore[call-arg]
    finally:
        owner.communicate(timeout=60)
