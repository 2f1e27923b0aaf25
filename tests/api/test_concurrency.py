"""In-process concurrency: searches with a slow reranker run alongside writes, are not serialised behind the scope's
write lock, never mix revisions, and CAS conflicts are typed."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pcmem
from pcmem import MemoryRerankDecision, NewEntry, RememberRequest, ReviseRequest, RevisionConflictError
from pcmem.types.search import SearchMemoryRequest

SLOW = 0.3


class SlowReranker:
    """Takes SLOW seconds and keeps the first two candidates (what the model does is not the point here)."""

    policy_id = "test.slow"

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self._lock = threading.Lock()

    def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(SLOW)
        with self._lock:
            self.active -= 1
        return MemoryRerankDecision(selected_ranks=tuple(range(1, min(2, limit) + 1)))


def test_searches_overlap_with_each_other_and_with_writes(db_path):
    reranker = SlowReranker()
    with pcmem.open(db_path, embedder=None, reranker=reranker) as runtime:
        memory = runtime.memory.for_scope("c")
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=f"kiwi note {i}")
                                                      for i in range(10))))

        def search(_):
            page = memory.search(SearchMemoryRequest(query="kiwi", mode="fts", limit=5))
            revisions = {hit.citation.revision for hit in page.hits} | {c.citation.revision
                                                                       for c in page.rerank.candidates}
            assert revisions == {page.memory.revision}  # one snapshot per page
            return page.memory.revision

        def write(i):
            for _ in range(50):
                head = memory.head().revision
                try:
                    return memory.revise(ReviseRequest(entry_id=f"e{i % 10}", text=f"kiwi revised {i}",
                                                       expected_revision=head)).memory.revision
                except RevisionConflictError:
                    continue
            raise AssertionError("no write got through")

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            searches = [pool.submit(search, i) for i in range(8)]
            writes = [pool.submit(write, i) for i in range(8)]
            seen = [f.result() for f in searches]
            written = sorted(f.result() for f in writes)
        elapsed = time.perf_counter() - started
        assert reranker.peak >= 2, "searches were serialised"
        assert elapsed < 8 * SLOW, f"8 slow searches took {elapsed:.2f} s: they did not overlap"
        assert written == list(range(2, 10))  # every write got its own revision, none lost
        assert all(1 <= r <= 9 for r in seen)


def test_stale_cas_from_parallel_writers_is_a_typed_conflict(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("c")
        memory.remember("first")
        barrier = threading.Barrier(6)
        outcomes = []

        def write(i):
            barrier.wait()
            try:
                memory.remember(RememberRequest(entries=(NewEntry(text=f"w{i}"),), expected_revision=1))
                outcomes.append("ok")
            except RevisionConflictError as error:
                assert (error.expected, error.actual) == (1, 2)
                outcomes.append("conflict")

        threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["conflict"] * 5 + ["ok"]
        assert memory.head().revision == 2
