"""Admission and RRF as pure functions: hand-computed values and hypothesis invariants (SPEC §2 steps 5-6)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from pcmem.analysis import analyze, query_terms
from pcmem.search.fusion import RRF_K, admit_fts, admit_vector, channel_candidate_count, fts_required_terms, rrf_fuse
from pcmem.types.search import Candidate


def cand(version: str, score: float = 1.0, matched: int = 0, entry: str | None = None, artifact: str = "mem_a"):
    return Candidate(artifact, entry or f"e{version}", version, score, matched)


def test_channel_candidate_count_is_max_of_4c_and_32():
    assert [channel_candidate_count(c) for c in (1, 8, 9, 10, 30, 100)] == [32, 32, 36, 40, 120, 400]


def test_fts_required_terms_table():
    assert [fts_required_terms(q) for q in (0, 1, 2, 3, 4, 8, 9, 12, 13, 40)] == [1, 1, 1, 2, 2, 2, 3, 3, 4, 10]


def test_admission_filters_but_keeps_order():
    fts = [cand("v1", 9, matched=1), cand("v2", 8, matched=2), cand("v3", 7, matched=3)]
    assert [c.entry_version_id for c in admit_fts(fts, 2)] == ["v1", "v2", "v3"]
    assert [c.entry_version_id for c in admit_fts(fts, 3)] == ["v2", "v3"]
    vec = [cand("v1", 0.9), cand("v2", 0.3), cand("v3", 0.2999)]
    assert [c.entry_version_id for c in admit_vector(vec)] == ["v1", "v2"]


def test_rrf_scores_against_hand_computed_values():
    fts = [cand("a"), cand("b"), cand("c")]
    vector = [cand("c"), cand("d"), cand("a")]
    fused = rrf_fuse({"fts": fts, "vector": vector}, limit=10)
    expected = {
        "a": 1 / 61 + 1 / 63,
        "b": 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 62,
    }
    assert {f.candidate.entry_version_id: f.score for f in fused} == expected
    # a and c tie exactly (1/61 + 1/63); b and d tie (1/62): bytewise entry ids break the ties.
    assert [f.candidate.entry_version_id for f in fused] == ["a", "c", "b", "d"]
    assert [f.matched_by for f in fused] == [("fts", "vector"), ("fts", "vector"), ("fts",), ("vector",)]


def test_rrf_tie_break_is_bytewise_artifact_then_entry_then_version():
    one = cand("v9", entry="é", artifact="mem_b")
    two = cand("v1", entry="z", artifact="mem_b")
    three = cand("v5", entry="a", artifact="mem_c")
    fused = rrf_fuse({"fts": [one], "vector": [two]}, limit=5)
    # equal scores (1/61 each); "z" (0x7a) sorts before "é" (0xc3 0xa9) bytewise
    assert [f.candidate.entry_version_id for f in fused] == ["v1", "v9"]
    fused = rrf_fuse({"fts": [three], "vector": [one]}, limit=5)
    assert [f.candidate.artifact_id for f in fused] == ["mem_b", "mem_c"]


def test_rrf_truncates_to_limit():
    fused = rrf_fuse({"fts": [cand(f"v{i:02}") for i in range(40)]}, limit=7)
    assert len(fused) == 7 and fused[0].score == 1 / (RRF_K + 1)


versions = st.lists(st.sampled_from([f"v{i}" for i in range(12)]), unique=True, max_size=12)


@given(fts=versions, vector=versions, limit=st.integers(1, 30))
def test_rrf_invariants(fts, vector, limit):
    fused = rrf_fuse({"fts": [cand(v) for v in fts], "vector": [cand(v) for v in vector]}, limit)
    assert len(fused) == min(limit, len(set(fts) | set(vector)))
    for item in fused:
        v = item.candidate.entry_version_id
        expected = sum(1 / (RRF_K + lst.index(v) + 1) for lst in (fts, vector) if v in lst)
        assert math.isclose(item.score, expected, rel_tol=1e-12)
        assert item.matched_by == tuple(ch for ch, lst in (("fts", fts), ("vector", vector)) if v in lst)
    keys = [(-f.score, f.candidate.key) for f in fused]
    assert keys == sorted(keys)
    assert len({f.candidate.entry_version_id for f in fused}) == len(fused)


@given(matched=st.lists(st.integers(0, 20), max_size=30), q=st.integers(0, 40))
def test_fts_admission_invariants(matched, q):
    candidates = [cand(f"v{i}", matched=m) for i, m in enumerate(matched)]
    admitted = admit_fts(candidates, q)
    need = 1 if q <= 2 else max(2, math.ceil(q / 4))
    assert [c.entry_version_id for c in admitted] == [c.entry_version_id for c in candidates if c.matched_terms >= need]


def test_analyzer_v1_words_and_cjk():
    assert analyze("Hello, WORLD! foo_bar 42") == ["hello", "world", "foo_bar", "42"]
    assert analyze("Straße") == ["strasse"]  # casefold, not lower
    assert analyze("中文搜索") == ["中", "文", "搜", "索", "中文", "文搜", "搜索"]
    assert analyze("Cafe\u0301") == ["café"]  # NFC first
    assert query_terms("tea tea TEA") == ["tea"]
    assert analyze("日本語のテスト") == ["日", "本", "語", "の", "テ", "ス", "ト",
                                       "日本", "本語", "語の", "のテ", "テス", "スト"]


def test_analyzer_v2_drops_stopwords_and_stems_latin_words_only():
    from pcmem.analysis import ANALYZERS

    v2 = ANALYZERS["v2"]
    assert v2.analyze("When did the team deploy? It deploys on Thursdays!") == ["team", "deploy", "deploy", "thursday"]
    assert v2.analyze("中文搜索 café_42") == ["中", "文", "搜", "索", "中文", "文搜", "搜索", "café_42"]
    assert v2.query_terms("not the drinks, no") == ["not", "drink", "no"]  # negations are not stopwords
