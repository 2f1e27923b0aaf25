"""Issue 16, data loss and corruption: nothing acknowledged is dropped, nothing is stored in the wrong vector space."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fakes import HashEmbedder

import pcmem
from pcmem.cli import main
from pcmem.errors import ConfigurationError
from pcmem.search.reindex import reindex
from pcmem.types.memory import NewEntry, RememberRequest, ReviseRequest


def test_revise_with_metadata_of_other_json_types_is_written(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(NewEntry(entry_id="e", text="t", metadata={"flag": True, "n": 1.0}))
        result = memory.revise(ReviseRequest(entry_id="e", text="t", metadata={"flag": 1, "n": 1}, expected_revision=1))
        assert not result.unchanged and result.memory.revision == 2
        stored = memory.get_entry("e").entry.metadata
        assert json.dumps(stored) == '{"flag": 1, "n": 1}'
        same = memory.revise(ReviseRequest(entry_id="e", text="t", metadata={"n": 1, "flag": 1}, expected_revision=2))
        assert same.unchanged and same.memory.revision == 2


def test_cli_says_unchanged(tmp_path):
    db = str(tmp_path / "m.duckdb")
    runner = CliRunner()
    assert runner.invoke(main, ["--db", db, "remember", "-s", "s", "--id", "e", "-m", '{"a": true}', "x"]).exit_code == 0
    out = runner.invoke(main, ["--db", db, "revise", "-s", "s", "-m", '{"a": true}', "e", "x"])
    assert out.exit_code == 0 and "unchanged" in out.stdout and "revised" not in out.stdout
    out = runner.invoke(main, ["--db", db, "revise", "-s", "s", "-m", '{"a": 1}', "e", "x"])
    assert out.exit_code == 0 and "revised 1 entry" in out.stdout


class SwitchesStoreWhileEmbedding(HashEmbedder):
    """Embeds, and before returning lets another runtime switch the store to ``other`` (the race of the issue)."""

    def __init__(self, other: HashEmbedder, path: Path) -> None:
        super().__init__("test/old-space", other.profile.dimension)
        self.other, self.path, self.armed = other, path, False

    def embed_documents(self, texts, progress=None):
        vectors = super().embed_documents(texts, progress)
        if self.armed:
            self.armed = False
            with pcmem.open(self.path, embedder=self.other) as runtime:
                reindex(runtime.backend, self.other)
        return vectors


@pytest.mark.parametrize("dimension", [32, 48])
def test_remember_racing_an_embedder_switch_stores_the_new_models_vector(db_path, dimension):
    new = HashEmbedder("test/new-space", dimension)
    old = SwitchesStoreWhileEmbedding(new, db_path)
    with pcmem.open(db_path, embedder=old) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("first note")
        old.armed = True
        runtime.memory.parts.embedders.embedder_for = lambda profile: new if profile == new.profile else None
        citation = memory.remember("second note about kiwis").citations[0]
        assert runtime.backend.embedding_profile() == new.profile
        stored = runtime.backend.stored_vectors(new.profile, [citation.entry_version_id])
        assert np.allclose(stored[citation.entry_version_id], new.embed_documents(["second note about kiwis"])[0])
        assert runtime.backend.check().ok


def test_remember_racing_a_switch_without_the_new_embedder_is_refused(db_path):
    new = HashEmbedder("test/new-space", 32)
    old = SwitchesStoreWhileEmbedding(new, db_path)
    with pcmem.open(db_path, embedder=old) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("first note")
        old.armed = True
        with pytest.raises(ConfigurationError, match="reindex --embedder|embedder='auto'"):
            memory.remember("second note")
        assert memory.head().revision == 2 or memory.head().revision == 1


def test_runtime_without_embedder_refuses_to_write_into_a_store_with_vectors(db_path):
    with pcmem.open(db_path, embedder=HashEmbedder()) as runtime:
        runtime.memory.for_scope("s").remember("with a vector")
    with pcmem.open(db_path, embedder=None) as runtime:
        with pytest.raises(ConfigurationError, match="embedder='auto'"):
            runtime.memory.for_scope("s").remember(RememberRequest(entries=(NewEntry(text="no vector"),)))
        assert runtime.memory.for_scope("s").head().revision == 1
