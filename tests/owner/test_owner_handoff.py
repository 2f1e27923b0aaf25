"""The hand-off does not stall agents (#39, item 3): a long-lived client (``pcmem mcp``, ``serve``, an app) prepares
to take the store over — DuckDB and the store's model loaded in the background — so that when the owner dies it
answers after a file open, not a model load; and a client that exits while preparing exits cleanly.

What it takes is measured by ``pcmem bench owner`` (two MCP hosts and a CLI loop, the owner SIGKILLed); here, that
the standby really loads what a take-over needs and that the take-over then works, as real processes.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

import pytest

import pcmem

#: Holds the store (with the bundled embedder) until stdin closes.
OWNER = r"""
import sys, pcmem
with pcmem.open(sys.argv[1]) as runtime:
    runtime.memory.for_scope("p").remember("The release moves to Friday.")
    print("ready", flush=True)
    sys.stdin.read()
"""

#: A client that prepares to take over, then exits without close after argv[2] seconds (the standby starting at once).
PREPARING_CLIENT = r"""
import sys, time, pcmem
from pcmem.compose import standby
standby.PREPARE_AFTER = 0.0
runtime = pcmem.open(sys.argv[1])
runtime.prepare_takeover()
time.sleep(float(sys.argv[2]))
sys.exit(0)
"""


def hold(path) -> subprocess.Popen[str]:  # noqa: ANN001
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdout.readline() == "ready\n"
    return owner


def test_a_client_prepared_to_take_over_loads_the_engine_and_the_model_and_takes_over(tmp_path, monkeypatch):
    from pcmem.compose import standby

    monkeypatch.setattr(standby, "PREPARE_AFTER", 0.0)
    prepared, prepare = threading.Event(), standby._prepare

    def watched(*args: object) -> None:  # the standby thread's own work: it tells when it is over
        try:
            prepare(*args)
        finally:
            prepared.set()

    monkeypatch.setattr(standby, "_prepare", watched)
    path = tmp_path / "store.duckdb"
    owner = hold(path)
    try:
        with pcmem.open(path) as runtime:
            assert runtime.owner_pid == owner.pid
            runtime.prepare_takeover()
            assert prepared.wait(120)  # (looking the thread up by name raced it: with no delay it could be over)
            assert {"duckdb", "onnxruntime"} <= set(sys.modules)
            from pcmem.embedding import presets

            assert presets.shared(presets.DEFAULT_PRESET)._model is not None  # the model this process will embed with
            owner.send_signal(signal.SIGKILL)
            owner.wait(timeout=60)
            page = runtime.memory.for_scope("p").search("when is the release")
            assert runtime.owner_pid is None and page.mode == "hybrid"  # this process took the store over
            assert page.hits[0].text == "The release moves to Friday."
    finally:
        if owner.poll() is None:
            owner.kill()


@pytest.mark.slow
def test_a_client_that_exits_while_preparing_exits_cleanly(tmp_path):
    """Exits at several moments of the standby (importing DuckDB, loading the model, done): status 0, no stderr."""
    path = tmp_path / "store.duckdb"
    owner = hold(path)
    try:
        for delay in ("0.0", "0.05", "0.2", "0.5", "1.0", "2.0"):
            done = subprocess.run([sys.executable, "-c", PREPARING_CLIENT, str(path), delay], capture_output=True,
                                  text=True, timeout=120)
            assert (done.returncode, done.stderr) == (0, ""), delay
    finally:
        owner.communicate(timeout=60)
