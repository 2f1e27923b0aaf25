"""Issue 16: one store used from many threads of one process — an app's thread pool is the normal case."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pcmem
from pcmem.store import held
from pcmem.types.memory import NewEntry, ReviseRequest
from pcmem.types.search import SearchMemoryRequest


def _mixed(memory, worker: int, count: int) -> list[int]:
    """remember / search / revise (with CAS retries); returns the revisions this worker's writes made."""
    written = []
    mine: list[str] = []
    for i in range(count):
        if i % 3 == 0 or not mine:
            result = memory.remember(NewEntry(entry_id=f"w{worker}-{i}", text=f"worker {worker} kiwi note {i}"))
            mine.append(f"w{worker}-{i}")
            written.append(result.memory.revision)
        elif i % 3 == 1:
            page = memory.search(SearchMemoryRequest(query="kiwi note", mode="fts", limit=5))
            assert {hit.citation.revision for hit in page.hits} <= {page.memory.revision}
        else:
            while True:
                try:
                    head = memory.head().revision
                    result = memory.revise(ReviseRequest(entry_id=mine[-1], text=f"revised {i} kiwi",
                                                         expected_revision=head))
                    written.append(result.memory.revision)
                    break
                except pcmem.RevisionConflictError:
                    continue
    return written


def test_threads_on_one_runtime_lose_nothing(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        with ThreadPoolExecutor(6) as pool:
            workers, count = 6, 12
            revisions = [r for rs in pool.map(lambda w: _mixed(memory, w, count), range(workers)) for r in rs]
        assert sorted(revisions) == list(range(1, len(revisions) + 1))
        assert memory.head().revision == len(revisions)
        assert runtime.backend.check().ok


def test_two_runtimes_on_one_path_share_one_backend(db_path):
    first = pcmem.open(db_path, embedder=None)
    second = pcmem.open(db_path, embedder=None)
    try:
        assert first.backend is second.backend and held.open_count() == 1
        with ThreadPoolExecutor(4) as pool:
            runs = [pool.submit(_mixed, runtime.memory.for_scope("s"), w, 15)
                    for w, runtime in enumerate([first, second, first, second])]
            revisions = [r for run in runs for r in run.result()]
        assert sorted(revisions) == list(range(1, len(revisions) + 1))
    finally:
        first.close()
        assert second.memory.for_scope("s").head().revision == len(revisions)  # still open for the other one
        second.close()
    assert held.open_count() == 0


def test_short_lived_threads_leave_no_cursors_behind(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("x")
        for _ in range(10):
            threads = [threading.Thread(target=memory.list) for _ in range(20)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        connections = runtime.backend._connections
        assert len(connections._idle) <= 8 and connections._users == 0


def test_async_tasks_share_one_runtime(db_path):
    async def main() -> list[int]:
        async with pcmem.open_async(db_path, embedder=None) as runtime:
            memory = runtime.memory.for_scope("s")
            results = await asyncio.gather(*(memory.remember(f"task {i} note") for i in range(20)),
                                           *(memory.search(SearchMemoryRequest(query="note", mode="fts"))
                                             for _ in range(10)))
            return sorted(r.memory.revision for r in results[:20])

    assert asyncio.run(main()) == list(range(1, 21))
