"""A stopped owner never hangs anyone (#39, item 2): SIGSTOP the process that holds the store (what Ctrl-Z, a
debugger or a suspended job does) and every call, open and command ends with OwnerStoppedError naming it and saying
what to do; SIGCONT and everything works again. A busy owner — running, just slow — is waited for.

Real processes, real signals; Linux says a process is stopped in /proc (elsewhere a client waits as before).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pcmem

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see a stopped process")

#: Holds the store; ``slow`` makes each search of a client take a while (the owner runs, it is just busy).
HOLDER = r"""
import sys, time, pcmem
if sys.argv[2] == "slow":
    from pcmem.search.service import SearchService
    searching = SearchService.search
    def slow(*args, **kwargs):
        time.sleep(2.5)
        return searching(*args, **kwargs)
    SearchService.search = slow
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    runtime.memory.for_scope("p").remember("the release moves to Friday")
    print("ready", flush=True)
    sys.stdin.read()
"""


def hold(path: Path, how: str = "fast") -> subprocess.Popen[str]:
    owner = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), how], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdout.readline() == "ready\n"
    return owner


def cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PCMEM_LOCK_TIMEOUT": "30"})


def assert_names(error: str, pid: int) -> None:
    assert f"process {pid} (" in error and "is stopped" in error
    assert f"kill -CONT {pid}" in error and "`fg`" in error and f"kill {pid}" in error


def test_a_stopped_owner_is_named_and_nothing_waits_for_it(tmp_path):
    path = tmp_path / "store.duckdb"
    owner = hold(path)
    runtime = pcmem.open(path, embedder=None, lock_timeout=30)
    try:
        scope = runtime.memory.for_scope("p")
        assert runtime.owner_pid == owner.pid and scope.search("release", mode="fts").hits
        owner.send_signal(signal.SIGSTOP)

        # Sent on the connection the search used: the request waits in the stopped owner's socket.
        with pytest.raises(pcmem.OwnerStoppedError, match="runs when it resumes"):
            scope.remember("written while it was stopped", entry_id="k", upsert=True)
        with pytest.raises(pcmem.OwnerStoppedError) as stopped:  # a new connection: the owner never greets it
            scope.search("release", mode="fts")
        assert isinstance(stopped.value, pcmem.StoreLockedError)
        assert (stopped.value.pid, stopped.value.exit_code) == (owner.pid, 10)
        assert_names(str(stopped.value), owner.pid)
        with pytest.raises(pcmem.OwnerStoppedError) as opening:
            pcmem.open(path, embedder=None, lock_timeout=30)
        assert_names(str(opening.value), owner.pid)
        for command in (["search", "-s", "p", "release"], ["list", "-s", "p"], ["scopes"], ["show", "-s", "p", "k"],
                        ["remember", "-s", "p", "another note"]):
            done = cli(path, *command)
            assert done.returncode == 10, (command, done.stderr)
            assert_names(done.stderr, owner.pid)
            assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, command
        host = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(path), "mcp"], input="", text=True,
                              capture_output=True, timeout=120, env={**os.environ, "PCMEM_LOCK_TIMEOUT": "30"})
        assert host.returncode == 10 and f"kill -CONT {owner.pid}" in host.stderr

        owner.send_signal(signal.SIGCONT)
        assert scope.search("release", mode="fts").hits
        for _ in range(200):  # the write sent before the stop runs once the owner reads it
            if scope.list().entries and "k" in {e.entry.entry_id for e in scope.list().entries}:
                break
            time.sleep(0.05)
        assert scope.get_entry("k").entry.text == "written while it was stopped"
    finally:
        runtime.close()
        if owner.poll() is None:
            owner.send_signal(signal.SIGCONT)
            owner.communicate(timeout=60)


def test_a_busy_owner_is_waited_for_and_a_stop_during_a_call_ends_it(tmp_path):
    path = tmp_path / "store.duckdb"
    owner = hold(path, "slow")
    try:
        with pcmem.open(path, embedder=None) as runtime:
            scope = runtime.memory.for_scope("p")
            # Longer than a stopped owner is given: it runs, so the call waits.
            assert [h.text for h in scope.search("release", mode="fts").hits] == ["the release moves to Friday"]
            # Stopped in the middle of the same kind of call: it ends with the typed error instead.
            started = subprocess.Popen(["sh", "-c", f"sleep 1; kill -STOP {owner.pid}"])
            with pytest.raises(pcmem.OwnerStoppedError):
                scope.search("release", mode="fts")
            started.wait(timeout=60)
            owner.send_signal(signal.SIGCONT)
            assert scope.search("release", mode="fts").hits
    finally:
        owner.send_signal(signal.SIGCONT)
        owner.communicate(timeout=60)


def test_the_stopped_error_crosses_the_socket_by_name():
    from pcmem.owner import protocol

    sent = pcmem.OwnerStoppedError("process 7 (python app.py) is stopped", pid=7, command="python app.py")
    received = protocol.decode_error(protocol.encode_error(sent))
    assert type(received) is pcmem.OwnerStoppedError
    assert (str(received), received.pid, received.command) == (str(sent), 7, "python app.py")
