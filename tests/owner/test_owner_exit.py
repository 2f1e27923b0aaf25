"""A process that owns a store and exits without ``close()`` exits cleanly (#39): status 0, nothing on stderr, every
acknowledged write kept — while another process writes through it, and while its own daemon thread writes.

The race it fixes (a thread inside DuckDB when the interpreter finalizes: "terminate called without an active
exception", status -6) hit most runs but not all, so each case runs several times, as real processes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pcmem

pytestmark = pytest.mark.slow  # real processes, repeated to catch a race

#: An app that owns the store, says "ready", lets a client write through it for a moment, and exits without close.
OWNER_EXITS = r"""
import sys, time, pcmem
runtime = pcmem.open(sys.argv[1], embedder=None)
runtime.memory.for_scope("p").remember("the owner's note")
print("ready", flush=True)
sys.stdin.readline()  # the client is writing now
time.sleep(0.3)
sys.exit(0)
"""

#: A client that writes keyed notes until told to stop (or its owner is gone and it took the store over), and prints
#: each acknowledged one.
CLIENT_WRITES = r"""
import sys, time, pcmem
with pcmem.open(sys.argv[1], embedder=None) as runtime:
    scope = runtime.memory.for_scope("p")
    print("client", runtime.owner_pid, flush=True)
    end = time.monotonic() + 2.0
    i = 0
    while time.monotonic() < end:
        scope.remember(f"client note {i}", entry_id=f"c{i}", upsert=True)
        print(f"ack c{i}", flush=True)
        i += 1
"""

#: An app whose own daemon thread writes while the main thread exits (optionally closing the runtime at exit).
DAEMON_WRITES = r"""
import atexit, sys, threading, time, pcmem
runtime = pcmem.open(sys.argv[1], embedder=None)
if sys.argv[2] == "atexit-close":
    atexit.register(runtime.close)
scope = runtime.memory.for_scope("d")
def write():
    i = 0
    while True:
        scope.remember(f"daemon note {i}", entry_id=f"d{i}", upsert=True)
        print(f"ack d{i}", flush=True)
        i += 1
threading.Thread(target=write, daemon=True).start()
time.sleep(0.4)
sys.exit(0)
"""


def entry_ids(path: Path, scope: str) -> set[str]:
    """Every entry id of ``scope``, page by page."""
    found: set[str] = set()
    with pcmem.open(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope(scope)
        page = memory.list(limit=100, state="all")
        while True:
            found |= {e.entry.entry_id for e in page.entries}
            if page.next_cursor is None:
                return found
            page = memory.list(pcmem.ListRequest(limit=100, state="all", cursor=page.next_cursor))


def acked(out: str) -> set[str]:
    """The ids printed as acknowledged (a daemon thread's last line may be cut by the exit: it counts as not)."""
    return {parts[1] for parts in map(str.split, out.splitlines()) if len(parts) == 2 and parts[0] == "ack"}


@pytest.mark.parametrize("run", range(6))
def test_an_owner_that_exits_without_close_while_a_client_writes_exits_cleanly(tmp_path, run):
    path = tmp_path / "store.duckdb"
    owner = subprocess.Popen([sys.executable, "-c", OWNER_EXITS, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdin is not None
    assert owner.stdout.readline() == "ready\n"
    client = subprocess.Popen([sys.executable, "-c", CLIENT_WRITES, str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert client.stdout is not None
    assert client.stdout.readline().split() == ["client", str(owner.pid)]
    owner.stdin.write("go\n")
    owner.stdin.flush()
    _, owner_err = owner.communicate(timeout=120)
    client_out, client_err = client.communicate(timeout=120)
    assert (owner.returncode, owner_err) == (0, "")
    assert client.returncode == 0, client_err
    written = acked(client_out)
    assert written and written <= entry_ids(path, "p")


@pytest.mark.parametrize("exit_kind", ["no-close", "atexit-close"])
def test_an_app_whose_daemon_thread_writes_at_exit_exits_cleanly(tmp_path, exit_kind):
    for run in range(8):
        path = tmp_path / f"store{run}.duckdb"
        done = subprocess.run([sys.executable, "-c", DAEMON_WRITES, str(path), exit_kind], capture_output=True,
                              text=True, timeout=120)
        assert (done.returncode, done.stderr) == (0, ""), f"run {run}"
        written = acked(done.stdout)
        assert written and written <= entry_ids(path, "d"), f"run {run}"
