"""Admission and RRF as pure functions: hand-computed values and hypothesis invariants (SPEC §2 steps 5-6)."""

from __future__ import annotations

import math

import pytest
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


# --- non-contract fusions (issue 31): hand-computed examples -----------------------------------------------------

from pcmem.search.fusion import (  # noqa: E402 - grouped with the tests that use them
    convex_fuse,
    fuse,
    fusion_parameters,
    normalise,
    weighted_rrf_fuse,
    weighted_rrf_parameters,
)

# fts: a 4.0, b 2.0, c 1.0 (BM25); vector: c 0.9, d 0.6, a 0.3 (cosine)
FTS = [cand("a", 4.0), cand("b", 2.0), cand("c", 1.0)]
VECTOR = [cand("c", 0.9), cand("d", 0.6), cand("a", 0.3)]


def test_normalise_min_max_and_theoretical_min_by_hand():
    assert normalise([4.0, 2.0, 1.0], "min-max") == [1.0, 1 / 3, 0.0]
    assert normalise([4.0, 2.0, 1.0], "theoretical-min", floor=0.0) == [1.0, 0.5, 0.25]
    assert normalise([0.9, 0.6, 0.3], "theoretical-min", floor=-1.0) == pytest.approx([1.0, 1.6 / 1.9, 1.3 / 1.9])
    assert normalise([0.7], "min-max") == [1.0]  # a lone candidate is its channel's best
    assert normalise([2.0, 2.0], "min-max") == [1.0, 1.0]
    assert normalise([], "min-max") == []


def test_convex_min_max_by_hand():
    # min-max: fts a 1, b 1/3, c 0; vector c 1, d 0.5, a 0; alpha 0.5 -> a 0.5, c 0.5 (tie: bytewise a first),
    # d 0.25, b 1/6. A channel that did not admit a candidate gives it 0.
    fused = convex_fuse({"fts": FTS, "vector": VECTOR}, limit=10, alpha=0.5)
    assert [f.candidate.entry_version_id for f in fused] == ["a", "c", "d", "b"]
    assert [f.score for f in fused] == pytest.approx([0.5, 0.5, 0.25, 1 / 6])
    assert [f.matched_by for f in fused] == [("fts", "vector"), ("fts", "vector"), ("vector",), ("fts",)]


def test_convex_alpha_weights_the_vector_channel():
    # alpha 0.8: a 0.2, b 0.2/3, c 0.8, d 0.4 -> c, d, a, b
    fused = convex_fuse({"fts": FTS, "vector": VECTOR}, limit=3, alpha=0.8)
    assert [f.candidate.entry_version_id for f in fused] == ["c", "d", "a"]
    assert [f.score for f in fused] == pytest.approx([0.8, 0.4, 0.2])


def test_convex_theoretical_min_by_hand():
    # fts / 4: a 1, b .5, c .25; vector (s + 1) / 1.9: c 1, d 1.6/1.9, a 1.3/1.9; alpha 0.5
    fused = convex_fuse({"fts": FTS, "vector": VECTOR}, limit=10, alpha=0.5, normalisation="theoretical-min")
    expected = {"a": 0.5 + 0.5 * 1.3 / 1.9, "c": 0.125 + 0.5, "d": 0.5 * 1.6 / 1.9, "b": 0.25}
    assert [f.candidate.entry_version_id for f in fused] == ["a", "c", "d", "b"]
    assert {f.candidate.entry_version_id: f.score for f in fused} == pytest.approx(expected)


def test_weighted_rrf_by_hand():
    # vector weight 0.75, fts 0.25: a .25/61 + .75/63, b .25/62, c .25/63 + .75/61, d .75/62 -> c, a, d, b
    fused = weighted_rrf_fuse({"fts": FTS, "vector": VECTOR}, limit=10, vector_weight=0.75)
    expected = {"a": 0.25 / 61 + 0.75 / 63, "b": 0.25 / 62, "c": 0.25 / 63 + 0.75 / 61, "d": 0.75 / 62}
    assert [f.candidate.entry_version_id for f in fused] == ["c", "a", "d", "b"]
    assert {f.candidate.entry_version_id: f.score for f in fused} == pytest.approx(expected)
    # equal RRF scores a and c: the contract puts a first (bytewise), the weight is what moved c ahead
    assert [f.candidate.entry_version_id for f in rrf_fuse({"fts": FTS, "vector": VECTOR}, 10)] == ["a", "c", "b", "d"]


@given(st.lists(st.integers(0, 30), max_size=25, unique=True), st.lists(st.integers(0, 30), max_size=25, unique=True),
       st.integers(1, 40))
def test_weighted_rrf_at_equal_weights_orders_exactly_as_rrf(fts, vector, limit):
    channels = {"fts": [cand(f"v{i:02}") for i in fts], "vector": [cand(f"v{i:02}") for i in vector]}
    halved = weighted_rrf_fuse(channels, limit, vector_weight=0.5)
    assert [f.candidate for f in halved] == [f.candidate for f in rrf_fuse(channels, limit)]


def test_fuse_dispatches_by_name_and_rrf_is_the_contract():
    channels = {"fts": FTS, "vector": VECTOR}
    assert fuse("rrf", channels, 10) == rrf_fuse(channels, 10)
    assert fusion_parameters("rrf") == {"k": RRF_K}
    params = fusion_parameters("convex")
    assert fuse("convex", channels, 10) == convex_fuse(channels, 10, alpha=float(params["alpha"]),
                                                       normalisation=params["normalisation"])  # type: ignore[arg-type]


def test_normalise_z_score_by_hand():
    # mean 7/3, population standard deviation sqrt(14/9)
    spread = (14 / 9) ** 0.5
    assert normalise([4.0, 2.0, 1.0], "z-score") == pytest.approx([(5 / 3) / spread, (-1 / 3) / spread,
                                                                    (-4 / 3) / spread])
    assert normalise([0.7], "z-score") == [1.0] and normalise([], "z-score") == []


def test_weighted_rrf_with_its_own_k_by_hand():
    # k = 1, vector weight 0.4, fts 0.6: a .6/2 + .4/4, b .6/3, c .6/4 + .4/2, d .4/3 -> a, c, b, d
    fused = weighted_rrf_fuse({"fts": FTS, "vector": VECTOR}, limit=10, vector_weight=0.4, k=1)
    expected = {"a": 0.6 / 2 + 0.4 / 4, "b": 0.6 / 3, "c": 0.6 / 4 + 0.4 / 2, "d": 0.4 / 3}
    assert [f.candidate.entry_version_id for f in fused] == ["a", "c", "b", "d"]
    assert {f.candidate.entry_version_id: f.score for f in fused} == pytest.approx(expected)
    # k decides whether one channel's first rank beats an entry both rank low: a .6/(k+1) against b (fourth and
    # fifth) .6/(k+4) + .4/(k+5): at k = 1, a .3 > b .187; at the contract's k = 60, a .0098 < b .0155
    channels = {"fts": [cand(v, 4.0 - i) for i, v in enumerate("ayzb")],
                "vector": [cand(v, 0.9 - i / 10) for i, v in enumerate("cwvub")]}
    assert [f.candidate.entry_version_id for f in weighted_rrf_fuse(channels, 2, vector_weight=0.4, k=1)] == ["a", "c"]
    assert [f.candidate.entry_version_id for f in weighted_rrf_fuse(channels, 2, vector_weight=0.4)] == ["b", "a"]


def test_weighted_rrf_is_offered_with_parameters_per_embedder():
    from pcmem.embedding.gemma_preset import PROFILE as GEMMA
    from pcmem.embedding.minilm import PROFILE as MINILM

    channels = {"fts": FTS, "vector": VECTOR}
    for model_id in (None, MINILM.model_id, GEMMA.model_id):
        chosen = weighted_rrf_parameters(model_id)
        assert fusion_parameters("weighted-rrf", model_id) == {"k": chosen.k, "vector_weight": chosen.vector_weight}
        assert fuse("weighted-rrf", channels, 10, model_id) == weighted_rrf_fuse(
            channels, 10, vector_weight=chosen.vector_weight, k=chosen.k)
    assert weighted_rrf_parameters(GEMMA.model_id).vector_weight > 0.5 > weighted_rrf_parameters(MINILM.model_id
                                                                                                 ).vector_weight


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_weights_outside_zero_to_one_are_refused(bad):
    with pytest.raises(ValueError, match="between 0 and 1"):
        convex_fuse({"fts": FTS}, 5, alpha=bad)
    with pytest.raises(ValueError, match="between 0 and 1"):
        weighted_rrf_fuse({"fts": FTS}, 5, vector_weight=bad)


def test_an_mpnet_store_gets_its_own_measured_weighted_rrf():
    """mpnet int8's parameters (k 5, vector weight 0.55: the tuning rule over LoCoMo's ten conversations) are keyed
    by the model id its store records, the same id its preset writes; fp32 and unmeasured models keep the shared
    value."""
    from pcmem.embedding.presets import preset_named
    from pcmem.search.fusion import WeightedRrf

    int8 = preset_named("mpnet-base-int8").profile.model_id
    assert weighted_rrf_parameters(int8) == WeightedRrf(k=5, vector_weight=0.55)
    assert fusion_parameters("weighted-rrf", int8) == {"k": 5, "vector_weight": 0.55}
    assert weighted_rrf_parameters(preset_named("mpnet-base").profile.model_id) == weighted_rrf_parameters(None)
