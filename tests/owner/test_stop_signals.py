"""SIGTERM and SIGHUP stop `pcmem serve`, `pcmem mcp` and `pcmem tui` cleanly: exit 0, the store closed (no WAL left),
every acknowledged write in the store — also when requests are in flight as the signal arrives.

Service managers, MCP hosts and closed terminals stop programs this way; Python's default is to die on the spot,
which left the store's write-ahead log behind. Each test runs the real command as a subprocess on a temporary store
and sends it a real signal.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

import pcmem

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

STOPS = [signal.SIGTERM, signal.SIGHUP]
#: Generous: a clean stop takes well under a second; GRACE_SECONDS (3) bounds requests in flight.
EXIT_TIMEOUT = 30
PCMEM = [sys.executable, "-m", "pcmem"]


def _wal(db: Path) -> Path:
    return db.with_name(db.name + ".wal")


def _texts(db: Path, scope: str) -> set[str]:
    with pcmem.open(db, embedder=None) as runtime:
        return {entry.entry.text for entry in runtime.memory.for_scope(scope).list().entries}


def _stopped(process: subprocess.Popen, number: int) -> int:
    process.send_signal(number)
    try:
        return process.wait(EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"still running {EXIT_TIMEOUT} s after {signal.Signals(number).name}") from None


# --- pcmem serve -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", STOPS, ids=lambda number: signal.Signals(number).name)
def test_serve_stops_cleanly_with_writes_in_flight(tmp_path, number):
    db = tmp_path / "served.duckdb"
    process = subprocess.Popen([*PCMEM, "--db", str(db), "serve", "--port", "0", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = json.loads(process.stdout.readline())["url"]
    acknowledged: list[str] = []
    done = threading.Event()

    def write(writer: int) -> None:
        with httpx.Client(base_url=url, timeout=EXIT_TIMEOUT) as client:
            for n in range(10_000):
                text = f"writer {writer} note {n}"
                try:
                    response = client.post("/v1/memory/remember", json={"scope_id": "s", "kind": "fact", "text": text})
                except httpx.HTTPError:
                    return  # the server stopped: this request was not acknowledged
                if response.status_code != 200 or done.is_set():
                    return
                acknowledged.append(text)

    writers = [threading.Thread(target=write, args=(k,)) for k in range(6)]
    for thread in writers:
        thread.start()
    while len(acknowledged) < 20 and process.poll() is None:
        time.sleep(0.01)
    assert all(thread.is_alive() for thread in writers), "the signal must arrive while requests are in flight"
    status = _stopped(process, number)
    done.set()
    for thread in writers:
        thread.join(EXIT_TIMEOUT)
    stderr = process.stderr.read()
    assert status == 0, stderr
    assert "Traceback" not in stderr
    assert not _wal(db).exists(), "the store was not closed: its write-ahead log is left behind"
    assert set(acknowledged) <= _texts(db, "s"), "an acknowledged write was lost"


def test_serve_stopped_while_it_starts_closes_the_store(tmp_path):
    """The signal lands once the store file exists: while the store opens or the models load (a handler that raised
    there made DuckDB fail with "Query interrupted"), or already serving. Either way: closed, exit 0."""
    db = tmp_path / "starting.duckdb"
    process = subprocess.Popen([*PCMEM, "--db", str(db), "serve", "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + EXIT_TIMEOUT
    while not db.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _stopped(process, signal.SIGTERM) == 0, process.stderr.read()
    assert not _wal(db).exists()
    with pcmem.open(db, embedder=None, create=False) as runtime:
        assert runtime.memory.scopes() == []


def test_serve_ctrl_c_is_still_an_interrupt(tmp_path):
    db = tmp_path / "served.duckdb"
    process = subprocess.Popen([*PCMEM, "--db", str(db), "serve", "--port", "0", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = json.loads(process.stdout.readline())["url"]
    httpx.post(f"{url}/v1/memory/remember", json={"scope_id": "s", "kind": "fact", "text": "kept"}).raise_for_status()
    assert _stopped(process, signal.SIGINT) == 130
    assert not _wal(db).exists() and _texts(db, "s") == {"kept"}


# --- pcmem mcp ---------------------------------------------------------------------------------------------------


class StdioClient:
    """`pcmem mcp` driven with raw JSON-RPC lines, as an MCP host does."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen([*PCMEM, "--db", str(db), "mcp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert json.loads(self.process.stdout.readline())["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def remember(self, request_id: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
            "name": "remember_memory", "arguments": {"scope_id": "s", "kind": "fact", "text": text}}})


def _acknowledged(lines: list[str], texts: dict[int, str]) -> set[str]:
    answers = [json.loads(line) for line in lines]
    return {texts[answer["id"]] for answer in answers
            if "result" in answer and not answer["result"].get("isError")}


@pytest.mark.parametrize("number", STOPS, ids=lambda number: signal.Signals(number).name)
def test_mcp_stops_cleanly_with_calls_in_flight(tmp_path, number):
    db = tmp_path / "agent.duckdb"
    client = StdioClient(db)
    texts = {n: f"agent note {n}" for n in range(1, 41)}
    for n, text in texts.items():
        client.remember(n, text)
    first = client.process.stdout.readline()  # the first answer: the other calls are queued or running
    status = _stopped(client.process, number)
    answers = [first, *client.process.stdout.read().splitlines()]
    stderr = client.process.stderr.read()
    assert status == 0, stderr
    assert "Traceback" not in stderr
    assert not _wal(db).exists(), "the store was not closed: its write-ahead log is left behind"
    acknowledged = _acknowledged(answers, texts)
    assert acknowledged and acknowledged <= _texts(db, "s"), "an acknowledged write was lost"


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=lambda number: signal.Signals(number).name)
def test_mcp_stops_while_the_host_is_silent(tmp_path, number):
    """The host wrote, got its answer and keeps stdin open: the server used to wait for the next line forever
    (SIGINT) or die (SIGTERM, SIGHUP)."""
    db = tmp_path / "agent.duckdb"
    client = StdioClient(db)
    client.remember(1, "written before the stop")
    assert "result" in json.loads(client.process.stdout.readline())
    status = _stopped(client.process, number)
    assert status == (130 if number == signal.SIGINT else 0), client.process.stderr.read()
    assert not _wal(db).exists()
    assert _texts(db, "s") == {"written before the stop"}


# --- pcmem tui ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", STOPS, ids=lambda number: signal.Signals(number).name)
def test_tui_quits_cleanly_on_a_stop_signal(tmp_path, number):
    pytest.importorskip("textual")
    db = tmp_path / "ui.duckdb"
    with pcmem.open(db, embedder=None) as runtime:
        runtime.memory.for_scope("signalscope").remember("seen in the terminal UI")
    controller, terminal = pty.openpty()
    process = subprocess.Popen([*PCMEM, "--db", str(db), "tui"], stdin=terminal,
                               stdout=terminal, stderr=terminal, start_new_session=True,
                               env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"})
    os.close(terminal)
    screen = b""

    def read_for(seconds: float) -> None:
        nonlocal screen
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if select.select([controller], [], [], 0.1)[0]:
                try:
                    screen += os.read(controller, 65536)
                except OSError:  # the process closed the terminal
                    return
            if process.poll() is not None or b"signalscope" in screen:
                return

    try:
        read_for(EXIT_TIMEOUT)
        assert b"signalscope" in screen, "the scopes screen never showed"
        process.send_signal(number)
        deadline = time.monotonic() + EXIT_TIMEOUT
        while process.poll() is None and time.monotonic() < deadline:
            read_for(0.2)
        status = process.wait(1)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    assert status == 0
    assert b"\x1b[?1049l" in screen, "the terminal was not restored (alternate screen still on)"
    assert not _wal(db).exists()
    assert _texts(db, "signalscope") == {"seen in the terminal UI"}
