"""The channels' top-k order (pcmem/store/duckdb/ranking.py): score descending, ties bytewise on the ids — checked
against the plain sort the full-text and vector views used before, on scores with many ties (a cut inside a run of
equal scores, runs above it, ids that order differently bytewise than by position) and non-ASCII ids."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pcmem.store.duckdb.ranking import best_positions


def _reference(scores: np.ndarray, ids: list[tuple[str, str]], limit: int) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), ids[i][0], ids[i][1]))[:limit]


@pytest.mark.parametrize("seed", range(40))
def test_best_positions_is_the_contract_order(seed):
    rng = random.Random(seed)
    count = rng.choice([0, 1, 3, 10, 11, 57, 500])
    levels = [rng.uniform(0.1, 9.0) for _ in range(rng.choice([1, 2, 5, 1000]))]  # few levels: many ties
    scores = np.array([rng.choice(levels) for _ in range(count)], dtype=rng.choice([np.float64, np.float32]))
    alphabet = ["a", "b", "B", "é", "z", "日", "0"]
    ids = [("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) + f"-{i}", f"ver{rng.randint(0, 9)}")
           for i in range(count)]
    rng.shuffle(ids)
    for limit in (1, 3, 10, 50):
        got = best_positions(scores, limit, lambda at: [ids[i] for i in at.tolist()])
        assert got == _reference(scores, ids, limit)


def test_a_cut_inside_a_long_run_of_ties_takes_the_smallest_ids():
    scores = np.array([2.0] * 300 + [3.0, 1.0])
    ids = [(f"e{999 - i:03d}", "v") for i in range(302)]
    best = best_positions(scores, 4, lambda at: [ids[i] for i in at.tolist()])
    assert [ids[i][0] for i in best] == ["e699", "e700", "e701", "e702"]  # 3.0 first, then the 2.0s by id


@pytest.mark.parametrize("seed", range(10))
def test_the_dense_and_the_sorted_way_to_a_documents_parts_agree(seed):
    """fts_cache scatters a query's postings into a row per slot when they cover the scope well, else finds the
    documents with np.unique: the same documents, in the same order, with the same parts either way."""
    from pcmem.store.duckdb.fts_cache import _parts_by_document

    rng = np.random.default_rng(seed)
    slots_in_scope = int(rng.integers(1, 400))
    columns = []
    for _ in range(int(rng.integers(1, 5))):
        slots = np.sort(rng.choice(slots_in_scope, size=int(rng.integers(1, slots_in_scope + 1)), replace=False))
        columns.append((slots.astype(np.int64), rng.uniform(0.01, 5.0, len(slots))))
    dense_docs, dense = _parts_by_document(columns, slots_in_scope)  # postings cover ≥ a quarter: scattered
    sorted_docs, by_unique = _parts_by_document(columns, 10**6)  # a huge scope: np.unique
    assert np.array_equal(dense_docs, sorted_docs) and dense_docs.dtype == sorted_docs.dtype
    assert np.array_equal(dense, by_unique)
