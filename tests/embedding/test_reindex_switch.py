"""Switching a store to another embedder: resumable, O(missing) work, and never without a usable vector channel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from fakes import HashEmbedder

import pcmem
from pcmem.cli import main
from pcmem.embedding import minilm
from pcmem.errors import EmbeddingError, StoreError
from pcmem.search.reindex import reindex
from pcmem.types.search import SearchMemoryRequest

NOTES = [f"Note {i}: the {w} team deploys on {d}." for i, (w, d) in enumerate(
    [(w, d) for w in ("desktop", "mobile", "web", "infra") for d in ("Monday", "Tuesday", "Thursday")])]


@pytest.fixture
def old() -> HashEmbedder:
    return HashEmbedder("test/old-space", 32)


@pytest.fixture
def new() -> HashEmbedder:
    return HashEmbedder("test/new-space", 48)


@pytest.fixture
def store(tmp_path: Path, old: HashEmbedder) -> Path:
    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=old) as runtime:
        memory = runtime.memory.for_scope("s")
        for text in NOTES:
            memory.remember(text)
    return path


def vector_hits(runtime, query: str = "mobile team Tuesday") -> list[str]:
    page = runtime.memory.for_scope("s").search(SearchMemoryRequest(query=query, mode="vector", limit=5))
    return [hit.text for hit in page.hits]


class FailsAfter(HashEmbedder):
    """Embeds ``batches`` batches, then fails: an interrupted reindex."""

    def __init__(self, model_id: str, dimension: int, batches: int) -> None:
        super().__init__(model_id, dimension)
        self.left = batches

    def embed_documents(self, texts, progress=None):
        if self.left == 0:
            raise EmbeddingError("the model crashed")
        self.left -= 1
        return super().embed_documents(texts, progress)


def test_a_switch_replaces_the_vector_space_in_one_step(store: Path, old, new) -> None:
    with pcmem.open(store, embedder=old) as runtime:
        before = vector_hits(runtime)
        report = runtime.reindex(embedder=new)
        assert report.switched and report.previous_profile == old.profile and report.embedded == len(NOTES)
        assert runtime.backend.embedding_profile() == new.profile
        assert runtime.backend.pending_embedding_profile() is None
        assert runtime.embedder is new and vector_hits(runtime)[0] == before[0]  # this runtime now uses new
        assert runtime.backend.check().ok
    with duckdb.connect(str(store), read_only=True) as db:
        tables = {name for (name,) in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "embeddings_pending" not in tables
        assert db.execute("SELECT count(*) FROM embeddings").fetchone() == (len(NOTES),)


def test_an_interrupted_switch_leaves_the_old_vectors_in_use_and_resumes(store: Path, old, new) -> None:
    with pcmem.open(store, embedder=old) as runtime:
        before = vector_hits(runtime)
        with pytest.raises(EmbeddingError):
            reindex(runtime.backend, FailsAfter(new.profile.model_id, new.profile.dimension, batches=2), batch_size=3)
        assert runtime.backend.embedding_profile() == old.profile
        assert runtime.backend.pending_embedding_profile() == new.profile
        assert runtime.backend.count_missing_vectors(new.profile) == len(NOTES) - 6
        assert vector_hits(runtime) == before  # searches are unaffected by the half-done switch
        runtime.memory.for_scope("s").remember("Note 99: a write during the switch.")  # lands in the old space
        report = runtime.backend.check()
        assert report.ok and any("test/new-space" in note and "in progress" in note for note in report.notes)
    with pcmem.open(store, embedder=old) as runtime:  # e.g. after a restart
        resumed = runtime.reindex(embedder=new)
        assert resumed.switched and resumed.embedded == len(NOTES) - 6 + 1  # only what was missing
        assert new.calls == len(NOTES) - 6 + 1
        assert vector_hits(runtime, "a write during the switch")[0] == "Note 99: a write during the switch."


def test_the_switch_waits_for_writes_that_land_after_the_last_batch(store: Path, old, new) -> None:
    with pcmem.open(store, embedder=old) as runtime:
        backend = runtime.backend
        backend.begin_embedding_switch(new.profile)
        batch = backend.versions_missing_vectors(new.profile, 100)
        backend.store_vectors(new.profile, dict(zip([v for v, _ in batch], new.embed_documents([t for _, t in batch]))))
        runtime.memory.for_scope("s").remember("A late write.")
        assert backend.commit_embedding_switch(new.profile) is False  # the late entry has no new vector yet
        assert backend.embedding_profile() == old.profile
        report = runtime.reindex(embedder=new)
        assert report.switched and report.embedded == 1


def test_switch_calls_are_checked(store: Path, old, new) -> None:
    with pcmem.open(store, embedder=old) as runtime:
        with pytest.raises(StoreError, match="not the pending embedding profile"):
            runtime.backend.commit_embedding_switch(new.profile)
        with pytest.raises(StoreError, match="not the active, pending or secondary"):
            runtime.backend.count_missing_vectors(new.profile)
        with pytest.raises(StoreError, match="reindex --embedder"):
            runtime.backend.set_embedding_profile(new.profile)
        runtime.backend.store_vectors(new.profile, {"x": new.embed_query("ignored")})  # dropped, not stored
        runtime.backend.begin_embedding_switch(new.profile)
        runtime.backend.begin_embedding_switch(old.profile)  # back to the active one: the pending switch is dropped
        assert runtime.backend.pending_embedding_profile() is None


_CHILD = textwrap.dedent("""
    import sys, time
    import pcmem
    from pcmem.testing import HashEmbedder
    from pcmem.search.reindex import reindex

    class Slow(HashEmbedder):
        def embed_documents(self, texts, progress=None):
            time.sleep(0.05)
            return super().embed_documents(texts, progress)

    with pcmem.open(sys.argv[1], embedder=HashEmbedder("test/old-space", 32)) as runtime:
        reindex(runtime.backend, Slow("test/new-space", 48), batch_size=2,
                progress=lambda done, total: print(done, flush=True))
    print("finished", flush=True)
""")


def test_a_killed_reindex_leaves_a_usable_store_that_resumes(store: Path, old, new) -> None:
    script = _CHILD
    child = subprocess.Popen([sys.executable, "-c", script, str(store)], stdout=subprocess.PIPE, text=True)
    for line in child.stdout:
        if line.strip() == "4":  # two batches stored
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait()
    assert child.returncode == -signal.SIGKILL
    with pcmem.open(store, embedder=old) as runtime:
        assert runtime.backend.check().ok
        assert runtime.backend.embedding_profile() == old.profile
        assert runtime.backend.pending_embedding_profile() == new.profile
        left = runtime.backend.count_missing_vectors(new.profile)
        assert 0 < left <= len(NOTES) - 4
        assert len(vector_hits(runtime)) == 5
        report = runtime.reindex(embedder=new)
        assert report.switched and report.embedded == left


@pytest.mark.slow
def test_cli_reindex_switches_to_a_preset(store: Path) -> None:
    result = CliRunner().invoke(main, ["--db", str(store), "reindex", "--embedder", "minilm-l6-int8", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["switched"] is True and report["embedded"] == len(NOTES)
    assert report["profile"] == minilm.PROFILE.describe()
    result = CliRunner().invoke(main, ["--db", str(store), "search", "--scope", "s", "--mode", "vector", "--json",
                                       "which team deploys on Thursday from the desktop?"])
    assert result.exit_code == 0, result.output  # the store now opens with its new embedder by itself
    assert json.loads(result.stdout)["hits"]


def test_a_switch_never_pairs_the_new_embedder_with_the_old_search_service(tmp_path, old, new, monkeypatch):
    """The runtime's embedder and its search service change as one value: a search that starts while the new
    service is being built (this one looks from inside its construction) sees the old pair, never a mix."""
    from pcmem.search.service import SearchService

    built_for: dict[int, object] = {}
    seen: list[tuple[object, object]] = []
    opened: list[pcmem.SyncRuntime] = []

    class Watched(SearchService):
        def __init__(self, backend, embedder, *args, **kwargs):
            if opened:  # a search starting now reads the runtime's embedder and search service
                parts = opened[0].memory.parts
                seen.append((parts.embedder, built_for.get(id(parts.search))))
            super().__init__(backend, embedder, *args, **kwargs)
            built_for[id(self)] = embedder

    for module in ("pcmem.compose.runtime_parts", "pcmem.compose.runtime", "pcmem.memory.scoped"):  # now, and before
        monkeypatch.setattr(f"{module}.SearchService", Watched, raising=False)
    with pcmem.open(tmp_path / "swap.duckdb", embedder=old) as runtime:
        runtime.memory.for_scope("s").remember("We deploy on Fridays.")
        opened.append(runtime)
        runtime.reindex(embedder=new)
        assert runtime.memory.parts.embedder is new
        assert built_for[id(runtime.memory.parts.search)] is new
    assert seen == [(old, old)]
