"""`pcmem check` finds damage in a store file without changing it; `--repair` rebuilds the derived data."""

from __future__ import annotations

import json

import duckdb
import pytest
from click.testing import CliRunner

import pcmem
from pcmem import NewEntry, RememberRequest, RetireRequest, ReviseRequest
from pcmem.cli import main
from pcmem.store.duckdb.fts_index import SCHEMA
from pcmem.types.search import SearchMemoryRequest


def _seed(path):
    with pcmem.open(path, embedder=None) as runtime:
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
    with pcmem.open(db_path, embedder=None) as runtime:
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


LOOKUP_INDEXES = {"head_entries_by_entry", "fts_dict_by_term", "fts_dict_by_termid", "fts_docs_by_name",
                  "fts_terms_by_doc"}


def test_forget_keeps_every_lookup_index(db_path):
    """The erasure rewrites the term dictionary into a fresh table; DuckDB drops a table's indexes with it, and
    without fts_dict_by_term every later write scanned the whole dictionary (issue 26)."""
    _seed(db_path)
    assert _index_names(db_path) >= LOOKUP_INDEXES
    with pcmem.open(db_path, embedder=None) as runtime:
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


# --- damaged storage blocks (issue 26: one flipped bit in a live block, every write failed, `check` said ok) -----


def _block_layout(path) -> tuple[int, dict[int, set[str]]]:
    """The file's block count and which tables' column data each block holds (a fresh store: no free blocks)."""
    with duckdb.connect(str(path), read_only=True) as db:
        total, free = db.execute("SELECT total_blocks, free_blocks FROM pragma_database_size()").fetchone()
        assert free == 0
        owners: dict[int, set[str]] = {}
        for schema, table in db.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall():
            for block, extra in db.execute("SELECT block_id, additional_block_ids FROM "
                                           f"pragma_storage_info('{schema}.{table}')").fetchall():
                for owned in [block, *(extra or [])]:
                    if owned is not None and owned >= 0:
                        owners.setdefault(owned, set()).add(f"{schema}.{table}")
        metadata = {block for (block,) in db.execute("SELECT block_id FROM pragma_metadata_info()").fetchall()}
    return total, {block: owners.get(block, {"metadata"} if block in metadata else set()) for block in range(total)}


def _flip_bit(path, block: int, at: int = 1000) -> None:
    """One flipped bit in the payload of ``block`` (DuckDB 1.5: 3 headers of 4 KiB, then 256 KiB blocks, each an
    8-byte checksum and its payload)."""
    offset = 3 * 4096 + block * 256 * 1024 + 8 + at
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ 0x10]))


def _entries(path) -> list:
    with pcmem.open(path, embedder=None) as runtime:
        return runtime.memory.for_scope("p").list(pcmem.ListRequest(state="all")).entries


def test_one_flipped_bit_in_an_index_block_is_reported_not_ok(db_path):
    """The issue's case: DuckDB reads an index block only along the keys a query looks up, so every check query
    succeeded and `check` said ok while every write stopped at the block."""
    _seed(db_path)
    _, layout = _block_layout(db_path)
    _flip_bit(db_path, min(block for block, owners in layout.items() if not owners))
    with pytest.raises(pcmem.StoreError, match="Corrupt database file"):
        with pcmem.open(db_path, embedder=None) as runtime:
            runtime.memory.for_scope("p").remember("one more")
    code, report = _check(db_path)
    assert code == 1 and not report["ok"]
    assert "damaged: index data (DuckDB does not say of which index)" in report["problems"]


def test_damaged_index_and_search_blocks_are_found_and_a_copy_rescues_every_entry(db_path, tmp_path):
    _seed(db_path)
    expected = _entries(db_path)
    _, layout = _block_layout(db_path)
    index_blocks = [block for block, owners in layout.items() if not owners]  # DuckDB lists no index's blocks
    search_block = next(block for block, owners in layout.items() if owners == {f"{SCHEMA}.terms"})
    assert len(index_blocks) >= 10
    for block in [*index_blocks, search_block]:
        _flip_bit(db_path, block)
    with pytest.raises(pcmem.StoreError, match="Corrupt database file"):  # what every write now meets
        with pcmem.open(db_path, embedder=None) as runtime:
            runtime.memory.for_scope("p").revise(ReviseRequest(entry_id="e0", text="changed", expected_version=1))
    before = db_path.read_bytes()
    code, report = _check(db_path)
    assert code == 1 and not report["ok"]
    assert report["damaged_blocks"] == sorted([*index_blocks, search_block])
    problems = " | ".join(report["problems"])
    assert f"{len(index_blocks) + 1} of the {len(layout)} storage blocks in use fail their checksum" in problems
    assert f"data of the table {SCHEMA}.terms" in problems and "index data" in problems
    assert any(note.startswith("what to do: copy the store to a new file with `pcmem migrate") for note in report["notes"])
    code, report = _check(db_path, "--repair")
    assert code == 1 and not report["ok"] and not report["repaired"]
    assert any("--repair changed nothing" in p for p in report["problems"])
    assert db_path.read_bytes() == before
    copy = tmp_path / "rescued.duckdb"  # what the check advises
    done = CliRunner().invoke(main, ["migrate", "--from", str(db_path), "--to", str(copy), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["verified"]
    assert _check(copy) == (0, _check(copy)[1]) and _check(copy)[1]["ok"]
    assert _entries(copy) == expected


def test_a_damaged_block_of_entry_texts_is_named_and_a_backup_advised(db_path):
    _seed(db_path)
    _, layout = _block_layout(db_path)
    _flip_bit(db_path, next(block for block, owners in layout.items() if owners == {"main.entry_versions"}))
    code, report = _check(db_path)
    assert code == 1 and report["damaged_blocks"]
    assert any("data of the table main.entry_versions (pcmem's records)" in p for p in report["problems"])
    assert any(note.startswith("what to do: restore the store from a backup") for note in report["notes"])


def test_a_flipped_bit_in_a_free_block_is_no_damage(db_path):
    from pcmem.store.duckdb import blocks

    _seed(db_path)
    with pcmem.open(db_path, embedder=None) as runtime:
        runtime.memory.for_scope("p").forget("e3")  # rewrites tables: their old blocks go on the free list
    scan = blocks.scan(db_path)
    with duckdb.connect(str(db_path), read_only=True) as db:
        total, free = db.execute("SELECT total_blocks, free_blocks FROM pragma_database_size()").fetchone()
    assert scan.ok and (scan.blocks, len(scan.free)) == (total, free) and free > 0
    _flip_bit(db_path, scan.free[0])
    assert _check(db_path)[0] == 0


def test_checking_a_held_store_keeps_it_held(db_path):
    """The block scan reads the file through a descriptor kept until DuckDB closes it: closing a descriptor of the
    file while DuckDB holds it would drop DuckDB's lock, and another process could open the store beside us."""
    import subprocess
    import sys

    _seed(db_path)
    # a raw DuckDB open, not pcmem: a pcmem process would become a client of this one instead of opening the file
    probe = "import sys, duckdb\ntry:\n    duckdb.connect(sys.argv[1]).close()\n" \
            "    print('opened')\nexcept duckdb.IOException:\n    print('locked')"
    with pcmem.open(db_path, embedder=None) as runtime:
        assert runtime.backend.check().ok
        done = subprocess.run([sys.executable, "-c", probe, str(db_path)], capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "locked", done.stderr
