"""An app's UI thread or asyncio loop is not stalled by pcmem's work in a worker (issue #42): a scope's first search
loads its views without building Python objects per value or per row, and looking up ``open_async`` on a loop
imports nothing heavy. What the stalls are in milliseconds is ``pcmem bench stall``'s business (timing is not
asserted here): these tests hold the structure that keeps them short.

Why objects matter: a C call that builds Python objects (``fetchall``: a float per vector component, a tuple per row)
holds the GIL from start to end, and tuples that outlive it set off a full cycle collection, which stops every
thread."""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc

import pytest
from fakes import HashEmbedder

import pcmem
from pcmem import NewEntry, RememberRequest

DIMENSION = 384
#: Over 2,048 entries a scope's vectors are read by a join, under it by key (vector_cache._INDEX_SCAN_KEYS): both ways.
SIZES = (600, 2500)


@pytest.fixture(scope="module", params=SIZES, ids=lambda size: f"{size}-entries")
def store(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("views") / "views.duckdb"
    embedder = HashEmbedder("test/hash-384", DIMENSION, by="text")
    with pcmem.open(path, embedder=embedder) as runtime:
        runtime.memory.for_scope("big").remember(RememberRequest(entries=tuple(
            NewEntry(entry_id=f"e{i:05}", text=f"note {i} about topic {i % 13} and person {i % 7}")
            for i in range(request.param))))
    return path, embedder, request.param


def test_a_scope_s_vectors_load_without_a_python_float_per_component(store):
    """Peak memory while the vector view loads stays within a few copies of the matrix itself (the matrix, DuckDB's
    arrays, a block being copied: ~3-4); a float object per component (fetchall) made it ~11 (24 bytes a float plus 8
    in its list, against 4 in the matrix)."""
    path, embedder, size = store
    with pcmem.open(path, embedder=embedder) as runtime:
        runtime.backend.warm("big", vectors=False)  # the full-text view first: not measured here
        tracemalloc.start()
        try:
            assert runtime.backend.warm("big")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    matrix_bytes = size * DIMENSION * 4
    assert peak < 5 * matrix_bytes + 2_000_000, f"peak {peak:,} bytes for a {matrix_bytes:,}-byte matrix"


@pytest.mark.parametrize("vectors", [False, True], ids=["full-text view", "both views"])
def test_a_scope_s_views_keep_no_object_per_entry_for_the_cycle_collector(store, vectors):
    """The objects a loaded view adds for the cycle collector to visit do not grow with the scope (ids are kept as
    lists of strings, which it never visits; a tuple per row is one object per entry)."""
    path, embedder, size = store
    with pcmem.open(path, embedder=embedder) as runtime:
        runtime.memory.for_scope("big").head()  # the store's own objects, before the views
        gc.collect()
        gc.disable()  # nothing collected (or untracked) while it loads: every object it made is still counted
        try:
            before = len(gc.get_objects())
            assert runtime.backend.warm("big", vectors=vectors)
            added = len(gc.get_objects()) - before
        finally:
            gc.enable()
    assert added < 300, f"{added} objects tracked by the collector after loading {size} entries"


def test_looking_up_open_async_on_a_loop_imports_neither_pydantic_nor_duckdb():
    """An asyncio app reads ``pcmem.open_async`` on its loop: what that imports runs on the loop. The sync runtime
    (pydantic, the store's types, DuckDB) is imported by the worker that opens the store."""
    code = ("import sys, pcmem; pcmem.open_async; pcmem.Runtime; "
            "print(sorted(m for m in ('pydantic', 'duckdb', 'numpy', 'pcmem.compose.runtime') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
