"""`pcmem check` finds damage in a store file without changing it; `--repair` rebuilds the derived data."""

from __future__ import annotations

import json

import duckdb
from click.testing import CliRunner

import pcmem
from pcmem import NewEntry, RememberRequest, RetireRequest, ReviseRequest
from pcmem.cli import main
from pcmem.store.duckdb.fts_index import SCHEMA
from pcmem.types.search import SearchMemoryRequest


def _seed(path):
    with pcmem.open_sync(path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("p")
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i}", text=f"note {i} about tea")
                                                      for i in range(5))))
        memory.revise(ReviseRequest(entry_id="e1", text="note one about coffee", expected_revision=1))
        memory.retire(RetireRequest(entry_id="e2", expected_revision=2))


def _check(path, *extra):
    result = CliRunner().invoke(main, ["--db", str(path), "check", "--json", *extra])
    return result.exit_code, json.loads(result.stdout)


def test_a_healthy_store_passes(db_path):
    _seed(db_path)
    code, report = _check(db_path)
    assert code == 0 and report["ok"] and report["revisions"] == 3 and report["entry_versions"] == 6


def test_damaged_projections_are_reported_then_repaired(db_path):
    _seed(db_path)
    assert _check(db_path)[0] == 0  # the CLI's runtime adopts the embedding profile once; later opens write nothing
    with duckdb.connect(str(db_path)) as db:
        db.execute("UPDATE head_entries SET state = 'retired' WHERE entry_id = 'e0'")
        db.execute(f"DELETE FROM {SCHEMA}.docs WHERE docid = (SELECT min(docid) FROM {SCHEMA}.docs)")
    before = db_path.read_bytes()
    code, report = _check(db_path)
    assert code == 1
    assert any("head projection" in p for p in report["problems"])
    assert any("full-text index" in p for p in report["problems"])
    assert db_path.read_bytes() == before, "check must not change the file"
    code, report = _check(db_path, "--repair")
    assert code == 0 and report["ok"], report["problems"]
    with pcmem.open_sync(db_path, embedder=None) as runtime:
        hits = runtime.memory.for_scope("p").search(SearchMemoryRequest(query="tea", mode="fts")).hits
        assert sorted(h.citation.entry_id for h in hits) == ["e0", "e3", "e4"]


def test_tampered_text_and_half_written_revision_are_reported(db_path):
    _seed(db_path)
    with duckdb.connect(str(db_path)) as db:
        db.execute("UPDATE entry_versions SET text = 'tampered' WHERE entry_id = 'e4'")
        db.execute("DELETE FROM revisions WHERE revision = 3")
    code, report = _check(db_path)
    assert code == 1
    problems = " | ".join(report["problems"])
    assert "sha256" in problems and "belong to no revision" in problems and "not exactly 1..3" in problems


def _index_names(path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as db:
        return {name for (name,) in db.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}


LOOKUP_INDEXES = {"entry_events_by_revision", "head_entries_by_entry", "fts_dict_by_term", "fts_dict_by_termid",
                  "fts_docs_by_name", "fts_terms_by_doc"}


def test_forget_keeps_every_lookup_index(db_path):
    """The erasure rewrites the term dictionary into a fresh table; DuckDB drops a table's indexes with it, and
    without fts_dict_by_term every later write scanned the whole dictionary (issue 26)."""
    _seed(db_path)
    assert _index_names(db_path) >= LOOKUP_INDEXES
    with pcmem.open_sync(db_path, embedder=None) as runtime:
        runtime.memory.for_scope("p").forget("e3")
    assert _index_names(db_path) >= LOOKUP_INDEXES
    assert _check(db_path)[0] == 0


def test_a_missing_lookup_index_is_reported_and_repair_recreates_it(db_path):
    _seed(db_path)
    with duckdb.connect(str(db_path)) as db:
        db.execute(f"DROP INDEX {SCHEMA}.fts_dict_by_term")
        db.execute("DROP INDEX head_entries_by_entry")
    code, report = _check(db_path)
    assert code == 1
    assert sorted(p.split()[2] for p in report["problems"]) == ["fts_dict_by_term", "head_entries_by_entry"]
    assert all("--repair" in p for p in report["problems"])
    code, report = _check(db_path, "--repair")
    assert code == 0 and report["ok"], report["problems"]
    assert _index_names(db_path) >= LOOKUP_INDEXES
