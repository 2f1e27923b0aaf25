"""Two processes, one store: a long-lived shared-mode process and a second writer, each doing a few hundred mixed
operations. Nothing is lost, nobody sees "database is locked", every result cites a valid revision."""

from __future__ import annotations

import json
import subprocess
import sys

import pcmem

OPERATIONS = 150
WORKER = r"""
import json, sys, pcmem
from pcmem import NewEntry, RememberRequest, ReviseRequest, RevisionConflictError
from pcmem import SearchMemoryRequest
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = []
with pcmem.open_sync(path, embedder=None, shared=True, lock_timeout=30) as runtime:
    memory = runtime.memory.for_scope("shared")
    mine = []
    for i in range(count):
        kind = i % 3
        if kind == 0 or not mine:
            result = memory.remember(RememberRequest(entries=(NewEntry(entry_id=f"{name}-{i}", text=f"{name} note {i} kiwi"),)))
            mine.append(f"{name}-{i}")
            log.append(["write", result.memory.revision, result.citations[0].model_dump()])
        elif kind == 1:
            page = memory.search(SearchMemoryRequest(query="kiwi", mode="fts", limit=5))
            log.append(["search", page.memory.revision, [h.citation.model_dump() for h in page.hits]])
        else:
            while True:
                head = memory.head().revision
                try:
                    result = memory.revise(ReviseRequest(entry_id=mine[-1], text=f"{name} revised {i} kiwi", expected_revision=head))
                    log.append(["write", result.memory.revision, result.citations[0].model_dump()])
                    break
                except RevisionConflictError:
                    continue  # the other process wrote in between: re-read the head and try again
print(json.dumps(log))
"""


def test_two_processes_share_one_store(tmp_path):
    path = tmp_path / "shared.duckdb"
    pcmem.open_sync(path, embedder=None).close()
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), name, str(OPERATIONS)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    logs = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        assert "locked" not in err.lower()
        logs.append(json.loads(out))
    with pcmem.open_sync(path, embedder=None) as runtime:
        assert runtime.backend.check().ok
        memory = runtime.memory.for_scope("shared")
        writes = [entry for log in logs for entry in log if entry[0] == "write"]
        assert memory.head().revision == len(writes)  # every write made exactly one revision, none lost
        assert sorted(rev for _, rev, _ in writes) == list(range(1, len(writes) + 1))
        for _, _, citation in writes:
            assert memory.get(pcmem.Citation(**citation)).entry.entry_version_id == citation["entry_version_id"]
        for log in logs:
            for kind, revision, hits in log:
                if kind == "search":
                    for citation in hits:
                        assert citation["revision"] == revision  # one revision per page
                        memory.get(pcmem.Citation(**citation))  # and it is a valid citation
