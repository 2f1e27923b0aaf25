"""``pcmem bench locomo-pool`` (issue #31): the embedding reranker over larger coarse pools, evaluated offline."""

from __future__ import annotations

import json

from click.testing import CliRunner
from fakes import locomo_file as _locomo_file

import pcmem
from pcmem.cli import main
from pcmem.rerank.embedding import EmbeddingReranker
from pcmem.types.search import SearchMemoryRequest
from pcmem_bench.fusion_pool import PooledQuestion, load, reranked
from pcmem_bench.fusion_tune import FetchedQuestion
from pcmem_bench.locomo_data import Question


def _item(pools: dict[int, list[str]], cosine: dict[str, float]) -> PooledQuestion:
    question = Question("c", 0, "q", 4, ("e1",))
    return PooledQuestion(FetchedQuestion(0, question, {}, 0.0),
                          {c: [(f"e{v}", f"v{v}") for v in pool] for c, pool in pools.items()},
                          {f"v{k}": value for k, value in cosine.items()})


def test_the_reranker_orders_the_pool_by_cosine_ties_in_coarse_order_and_a_30_hit_page_uses_a_30_pool():
    item = _item({30: ["1", "2", "3", "4"], 50: ["1", "2", "3", "4", "5"]},
                 {"1": 0.2, "2": 0.9, "3": 0.5, "4": 0.5, "5": 0.95})
    assert reranked(item, 30, 10) == ["e2", "e3", "e4", "e1"]  # 3 and 4 tie: coarse order
    assert reranked(item, 50, 10) == ["e5", "e2", "e3", "e4", "e1"]
    assert reranked(item, 30, 30) == ["e2", "e3", "e4", "e1"]
    assert reranked(item, 50, 30) == ["e5", "e2", "e3", "e4", "e1"]  # pool max(30, 50)
    assert reranked(_item({30: ["1", "2"]}, {"2": 0.1}), 30, 10) == ["e2", "e1"]  # no vector: last


def test_locomo_pool_reproduces_the_real_embedding_rerank_and_reuses_its_file(tmp_path):
    data = _locomo_file(tmp_path / "locomo.json")
    store = str(tmp_path / "locomo.duckdb")
    real = CliRunner().invoke(main, ["bench", "locomo", "--data", str(data), "--modes", "hybrid", "--rerank",
                                     "embedding", "--store", store, "--out", str(tmp_path / "real.json"),
                                     "--alone-sample", "0", "--json"])
    assert real.exit_code == 0, real.output
    searched = json.loads((tmp_path / "real.json").read_text())["reports"][0]["overall"]
    args = ["bench", "locomo-pool", "--data", str(data), "--store", store, "--pooled", str(tmp_path / "p.jsonl"),
            "--out", str(tmp_path / "pool.json"), "--json"]
    for _ in range(2):  # the second run reads the pooled file and searches nothing
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        offline = json.loads((tmp_path / "pool.json").read_text())
        grid = offline["grid_by_half"]["rerank:pool=30"]
        assert (grid["frac@10"][0], grid["frac@30"][0]) == (searched["frac@10"], searched["frac@30"])
        assert offline["folds"][1]["rows"]["rerank:pool=100"]["n"] == 3
    with pcmem.open(store) as runtime:  # every position of the page, not only the fraction found
        for item in load(tmp_path / "p.jsonl"):
            question = item.fetched.question
            page = runtime.memory.for_scope(f"locomo-{question.conversation}").search(
                SearchMemoryRequest(query=question.question, limit=5, mode="hybrid"), reranker=EmbeddingReranker())
            assert [hit.citation.entry_id for hit in page.hits] == reranked(item, 30, 5)
