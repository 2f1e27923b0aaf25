"""A write's opening read — the scope's head and the embedding profiles — kept from the last write of a held store
(the memo of the write generation, store/duckdb/generation_memo.py), and read again whenever anything else may have
changed them: another backend of the file in this process, a vector-space change, a write that failed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from statement_log import statements_starting

import pcmem
from pcmem.store.duckdb import DuckDBBackend
from pcmem.testing import HashEmbedder
from pcmem.types.embedding import EmbeddingProfile

_OPENING = "SELECT true, artifact_id, head_revision"


def _openings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The opening reads run on stores opened after this call."""
    return statements_starting(monkeypatch, _OPENING)


def _revisions(runtime: pcmem.SyncRuntime, scope: str) -> list[int]:
    memory = runtime.backend.find_memory(scope)
    assert memory is not None
    return [info.revision for info in runtime.backend.revisions(memory)]


def test_a_held_store_reads_a_scopes_head_once_for_many_writes(db_path, monkeypatch):
    log = _openings(monkeypatch)
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("the first note")
        log.clear()
        for n in range(3):
            memory.remember(f"note number {n}")
        assert log == []
        runtime.memory.for_scope("t").remember("another scope's note")
        memory.remember("back to the first scope")
        assert len(log) == 2, "a write of another scope reads its own head, then this scope's again"
        assert _revisions(runtime, "s") == [1, 2, 3, 4, 5]


def test_another_backend_of_the_file_makes_the_next_write_read_again(db_path, monkeypatch):
    log = _openings(monkeypatch)
    first = pcmem.SyncRuntime(DuckDBBackend(db_path), embedder=HashEmbedder(dimension=8))
    second = pcmem.SyncRuntime(DuckDBBackend(db_path), embedder=HashEmbedder(dimension=8))
    try:
        first.memory.for_scope("s").remember("from the first backend")
        second.memory.for_scope("s").remember("from the second backend")
        log.clear()
        first.memory.for_scope("s").remember("from the first backend again")  # revision 3, not a second 2
        assert len(log) == 1
        assert _revisions(first, "s") == [1, 2, 3]
    finally:
        first.close()
        second.close()


def test_a_vector_space_change_makes_the_next_write_read_the_profiles_again(db_path):
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("a note before the secondary space")
        secondary = EmbeddingProfile(model_id="second-model", dimension=4, normalized=True)
        runtime.backend.set_secondary_embedding_profile(secondary)
        with runtime.backend.write("s") as write:
            assert write.secondary_embedding_profile() == secondary


def test_a_write_that_fails_rolls_back_and_the_next_still_opens_from_the_memo(db_path, monkeypatch):
    """A failed write rolled back: the file is as the last COMMIT left it, which is what the memo holds (a failed
    COMMIT moves the write clock, and the memo is stale then)."""
    log = _openings(monkeypatch)
    with pcmem.open(db_path, embedder=HashEmbedder(dimension=8)) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("a kept note")
        with pytest.raises(RuntimeError), runtime.backend.write("s"):
            raise RuntimeError("the caller gave up")
        log.clear()
        memory.remember("after the failed write")
        assert log == []
        assert _revisions(runtime, "s") == [1, 2]


def test_a_write_another_process_sends_through_this_one_leaves_the_opening_of_the_next(db_path, monkeypatch):
    """Another process writes through this process (its owner), on this backend: its write leaves the scope's
    opening, so the next write here reads nothing again and lands on the head that write made."""
    log = _openings(monkeypatch)
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("written here")
        subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import pcmem
            with pcmem.open({str(db_path)!r}, embedder=None) as runtime:
                assert runtime.owner_pid is not None  # a client: the write runs in the owner
                runtime.memory.for_scope("s").remember("written by another process")
        """)], check=True, timeout=120)
        log.clear()
        memory.remember("written here again")
        assert log == []
        assert _revisions(runtime, "s") == [1, 2, 3]

