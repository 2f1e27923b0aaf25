"""SIGKILL during a stream of writes: the store opens, `check` passes, every acknowledged write is there, and no
half-written revision is visible. (A few trials here; more are cheap to run by raising TRIALS.)"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

import pcmem
from pcmem import ReviseRequest

TRIALS = 3
WRITER = r"""
import sys, pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest
with pcmem.open_sync(sys.argv[1], embedder=None) as runtime:
    memory = runtime.memory.for_scope("crash")
    i = 0
    while True:
        head = memory.head()
        if i % 3 == 2 and head is not None:
            entry = memory.list().entries[0].entry.entry_id
            result = memory.revise(ReviseRequest(entry_id=entry, text=f"revision text {i}", expected_revision=head.revision))
        else:
            entries = tuple(NewEntry(entry_id=f"w{i}-{j}", text=f"write {i} part {j} " + "x" * 200) for j in range(20))
            result = memory.remember(RememberRequest(entries=entries))
        print(result.memory.revision, flush=True)   # acknowledged: the call returned
        i += 1
"""


@pytest.mark.parametrize("trial", range(TRIALS))
def test_sigkill_during_writes_loses_nothing_acknowledged(tmp_path, trial):
    path = tmp_path / "crash.duckdb"
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    acknowledged: list[int] = []
    deadline = time.monotonic() + 60
    kill_after = random.Random(trial).randint(3, 12)
    while len(acknowledged) < kill_after and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        acknowledged.append(int(line))
    time.sleep(random.Random(trial).random() * 0.05)  # land somewhere inside the next write
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert acknowledged, "the writer never acknowledged a write"
    with pcmem.open_sync(path, embedder=None) as runtime:
        report = runtime.backend.check()
        assert report.ok, report.problems
        memory = runtime.memory.for_scope("crash")
        head = memory.head().revision
        assert head >= acknowledged[-1]  # every returned write survived
        revisions = memory.revisions()
        assert [r.revision for r in revisions] == list(range(1, head + 1))
        assert all(r.change_count in (1, 20) for r in revisions)  # no half-written revision
        entry = memory.list().entries[0].entry.entry_id
        memory.revise(ReviseRequest(entry_id=entry, text="the store still takes writes", expected_revision=head))
