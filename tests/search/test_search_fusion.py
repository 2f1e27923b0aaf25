"""Issue 31: a non-contract fusion chosen per search or as the runtime's default, on real DuckDB files.

The default must stay exactly the contract's equal-weight RRF (SPEC §2 step 6): checked against RRF computed here
from the two single-channel searches' ranks, not against the fusion code itself.
"""

from __future__ import annotations

import json

import pytest

import pcmem
from pcmem import InputError, NewEntry, RememberRequest, RuntimeConfig
from pcmem.errors import ConfigurationError
from pcmem.search.fusion import CONVEX_ALPHA, RRF_K, fusion_parameters
from pcmem.testing import HashEmbedder
from pcmem.types.search import SearchMemoryRequest

TEXTS = [
    "Melanie painted a sunrise over the lake last summer.",
    "Caroline went to the LGBTQ support group on Tuesday.",
    "Melanie and her kids went camping near the lake.",
    "The support group meets at the community center.",
    "Caroline is researching adoption agencies.",
    "A sunrise painting hangs in Melanie's kitchen.",
    "Camping trips are Melanie's favourite family time.",
    "Caroline painted a mural at the community center.",
    "The lake was calm at sunrise.",
    "Adoption interviews start next month for Caroline.",
    "Melanie signed up for a pottery class.",
    "Caroline and Melanie talked about the support group.",
]
QUERIES = ["Melanie painted sunrise lake", "Caroline support group community", "camping kids lake",
           "adoption agencies Caroline", "pottery class"]


def open_store(path, fusion: str | None = None):
    config = RuntimeConfig() if fusion is None else RuntimeConfig(memory_search_fusion=fusion)
    return pcmem.open(path, embedder=HashEmbedder(), config=config)


@pytest.fixture
def store(db_path):
    with open_store(db_path) as runtime:
        runtime.memory.for_scope("s").remember(RememberRequest(
            entries=tuple(NewEntry(entry_id=f"e{i:02}", text=text) for i, text in enumerate(TEXTS))))
    return db_path


def _ranked(page) -> list[tuple[str, float]]:
    return [(hit.citation.entry_id, hit.score) for hit in page.hits]


@pytest.mark.parametrize("query", QUERIES)
def test_the_default_is_exactly_the_contracts_rrf(store, query):
    with open_store(store) as runtime:
        memory = runtime.memory.for_scope("s")
        page = memory.search(SearchMemoryRequest(query=query, mode="hybrid", limit=10))
        # every candidate fits in a channel here (12 entries < 32), so each single-channel page is that channel's
        # whole admitted list, in rank order
        fts = [h.citation.entry_id for h in memory.search(SearchMemoryRequest(query=query, mode="fts", limit=50)).hits]
        vec = [h.citation.entry_id for h in memory.search(SearchMemoryRequest(query=query, mode="vector",
                                                                              limit=50)).hits]
    scores: dict[str, float] = {}
    for ranked in (fts, vec):
        for rank, entry in enumerate(ranked, start=1):
            scores[entry] = scores.get(entry, 0.0) + 1.0 / (RRF_K + rank)
    expected = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:10]  # entry ids are the tie-break here
    assert fts and vec  # (for the first two queries the channels' orders differ too)
    assert _ranked(page) == expected  # exact floats: the very same sums
    assert page.fusion == "rrf" and page.fusion_parameters == {"k": 60}


def test_a_request_chooses_its_fusion_and_the_page_names_it(store):
    query = "Melanie painted sunrise lake"
    with open_store(store) as runtime:
        memory = runtime.memory.for_scope("s")
        default = memory.search(SearchMemoryRequest(query=query, mode="hybrid"))
        explicit = memory.search(SearchMemoryRequest(query=query, mode="hybrid", fusion="rrf"))
        convex = memory.search(SearchMemoryRequest(query=query, mode="hybrid", fusion="convex"))
    assert _ranked(explicit) == _ranked(default)
    assert (convex.fusion, convex.fusion_parameters) == ("convex", fusion_parameters("convex"))
    assert _ranked(convex) != _ranked(default)  # convex scores are normalised scores, not 1/(60 + rank) sums
    assert {h.citation.entry_id for h in convex.hits} == {h.citation.entry_id for h in default.hits}  # same pool


def test_the_runtime_default_applies_when_the_request_does_not_choose(store):
    query = "Caroline support group community"
    with open_store(store) as runtime:
        rrf = runtime.memory.for_scope("s").search(SearchMemoryRequest(query=query))
        asked = runtime.memory.for_scope("s").search(SearchMemoryRequest(query=query, fusion="convex"))
    with open_store(store, fusion="convex") as runtime:
        memory = runtime.memory.for_scope("s")
        defaulted = memory.search(SearchMemoryRequest(query=query))
        overridden = memory.search(SearchMemoryRequest(query=query, fusion="rrf"))
        several = runtime.memory.search(SearchMemoryRequest(query=query), scopes=["s", "empty"])
    assert defaulted.fusion == "convex" and _ranked(defaulted) == _ranked(asked)
    assert overridden.fusion == "rrf" and _ranked(overridden) == _ranked(rrf)
    assert several.fusion == "convex" and _ranked(several) == _ranked(asked)


def test_the_default_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("PCMEM_SEARCH_FUSION", " Convex ")
    assert RuntimeConfig.from_env().memory_search_fusion == "convex"
    monkeypatch.delenv("PCMEM_SEARCH_FUSION")
    assert RuntimeConfig.from_env().memory_search_fusion is None  # unset: the store's default, else rrf
    monkeypatch.setenv("PCMEM_SEARCH_FUSION", "bm25")
    with pytest.raises(ConfigurationError, match="memory_search_fusion"):
        RuntimeConfig.from_env()


@pytest.mark.parametrize("bad", ["borda", "weighted_rrf", "", 3, ["rrf"]])
def test_an_unknown_fusion_is_an_input_error(bad):
    with pytest.raises(InputError, match="fusion"):
        SearchMemoryRequest(query="x", fusion=bad)


def test_the_cli_takes_fusion_and_says_which_ran(tmp_path):
    from click.testing import CliRunner

    from pcmem.cli import main

    db = str(tmp_path / "m.duckdb")
    env = {"PCMEM_DB": None, "PCMEM_SEARCH_FUSION": None}

    def run(*args: str):
        result = CliRunner().invoke(main, ["--db", db, *args], env=env)
        assert result.exit_code == 0 and "Traceback" not in result.output, result.output
        return result.stdout

    run("remember", "--scope", "s", "The team deploys the desktop app on Fridays.")
    page = json.loads(run("search", "--scope", "s", "--mode", "fts", "--fusion", "convex", "deploys", "--json"))
    assert (page["fusion"], page["fusion_parameters"]) == ("convex", fusion_parameters("convex"))
    shown = " ".join(run("search", "--scope", "s", "--mode", "fts", "--fusion", "convex", "deploys").split())
    assert f"fusion convex(alpha={CONVEX_ALPHA}, normalisation=min-max), chosen by the search: a non-contract" in shown
    assert "fusion" not in run("search", "--scope", "s", "--mode", "fts", "deploys")
    bad = CliRunner().invoke(main, ["--db", db, "search", "--scope", "s", "--fusion", "borda", "x"], env=env)
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_convex_weighs_an_embeddinggemma_stores_vectors_with_its_own_alpha(db_path):
    """Issue 31: with EmbeddingGemma's vectors the shared 0.45 lost to vector alone; its store fuses with 0.70."""
    from pcmem.embedding.gemma_preset import PROFILE
    from pcmem.embedding.presets import preset_named
    from pcmem.search.fusion import convex_fuse

    alpha = preset_named("embeddinggemma-300m").fusion.convex_alpha  # the preset declares it
    assert alpha == 0.70 != CONVEX_ALPHA
    gemma_like = HashEmbedder(model_id=PROFILE.model_id, dimension=PROFILE.dimension)
    with pcmem.open(db_path, embedder=gemma_like) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(RememberRequest(entries=tuple(NewEntry(entry_id=f"e{i:02}", text=text)
                                                      for i, text in enumerate(TEXTS))))
        for query in QUERIES:
            request = SearchMemoryRequest(query=query, mode="hybrid", fusion="convex")
            page = memory.search(request)
            channels = runtime.memory.parts.search.channel_lists(("s",), request).channels
            expected = [(f.candidate.entry_id, f.score) for f in convex_fuse(channels, 10, alpha=alpha)]
            assert page.fusion_parameters["alpha"] == alpha and _ranked(page) == expected


def test_weighted_rrf_runs_through_a_search_with_its_embedders_parameters(store):
    """Issue 31: weighted RRF with a tuned k, offered as a fusion (per request, runtime or store default)."""
    from pcmem.search.fusion import weighted_rrf_fuse, weighted_rrf_parameters

    chosen = weighted_rrf_parameters(HashEmbedder().profile.model_id)
    with open_store(store) as runtime:
        memory = runtime.memory.for_scope("s")
        for query in QUERIES:
            request = SearchMemoryRequest(query=query, mode="hybrid", fusion="weighted-rrf")
            page = memory.search(request)
            channels = runtime.memory.parts.search.channel_lists(("s",), request).channels
            expected = weighted_rrf_fuse(channels, 10, vector_weight=chosen.vector_weight, k=chosen.k)
            assert page.fusion_parameters == {"k": chosen.k, "vector_weight": chosen.vector_weight}
            assert _ranked(page) == [(f.candidate.entry_id, f.score) for f in expected]
