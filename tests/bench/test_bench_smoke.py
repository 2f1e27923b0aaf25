"""Smoke runs of the benchmark commands on tiny inputs (the real runs are documented in the README)."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner
from fakes import locomo_file as _locomo_file

from pcmem.cli import main
from pcmem.search.fusion import CONVEX_ALPHA, CONVEX_NORMALISATION
from pcmem_bench import metrics
from pcmem_bench.locomo_data import load, parse_evidence


def test_locomo_data_repairs_malformed_evidence(tmp_path):
    conversation = load(_locomo_file(tmp_path / "locomo.json"))[0]
    assert [q.evidence for q in conversation.questions[:3]] == [("D1:1",), ("D2:1", "D1:2"), ("D2:2",)]
    assert conversation.unresolved == ["D9:9"]
    assert "[1:56 pm on 8 May, 2023] Ana: Look at this. [shares a photo: a photo of a dog]" in [
        t.entry_text() for t in conversation.turns]
    assert parse_evidence("D30:05", {"D30:5"}) == (["D30:5"], True)


def test_bench_locomo_runs_end_to_end(tmp_path):
    data = _locomo_file(tmp_path / "locomo.json")
    args = ["--db", str(tmp_path / "unused.duckdb"), "bench", "locomo", "--data", str(data), "--modes", "fts,hybrid",
            "--store", str(tmp_path / "locomo.duckdb"), "--out", str(tmp_path / "out.json"), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["questions"] == 3 and [r["mode"] for r in report["reports"]] == ["fts", "hybrid"]
    overall = report["reports"][0]["overall"]
    assert 0 < overall["frac@10"] <= 1 and overall["n"] == 3
    again = CliRunner().invoke(main, args)  # reuses the ingested store: same metrics (latency aside)
    assert again.exit_code == 0, again.output
    rerun = json.loads((tmp_path / "out.json").read_text())["reports"]
    quality = ("frac@5", "frac@10", "frac@30", "all@10", "session_mrr", "ndcg@10")
    assert [{k: r["overall"][k] for k in quality} for r in rerun] == [
        {k: r["overall"][k] for k in quality} for r in report["reports"]]


def test_bench_locomo_refuses_one_seekdb_store_for_several_embedders(tmp_path):
    data = _locomo_file(tmp_path / "locomo.json")
    result = CliRunner().invoke(main, ["bench", "locomo", "--data", str(data), "--backends", "seekdb",
                                       "--seekdb-store", f"seekdb://{tmp_path / 'sdb'}?database=x",
                                       "--embedder", "minilm-l6-int8,mpnet-base-int8"])
    assert result.exit_code == 2 and "each embedder needs its own" in result.stderr
    assert not (tmp_path / "sdb").exists()


def test_metrics_by_hand():
    ranked = ["D1:1", "D2:5", "D1:2", "D3:1"]
    assert metrics.fraction_found(ranked, ["D1:2", "D3:9"], 3) == 0.5
    assert metrics.all_found(ranked, ["D1:1", "D1:2"], 3)
    assert metrics.session_mrr(ranked, ["D2:9"]) == 0.5
    assert metrics.session_recall(ranked, ["D2:9", "D4:1"], 10) == 0.5
    assert round(metrics.ndcg(ranked, ["D2:5"], 10), 4) == round(1 / __import__("math").log2(3), 4)


def test_bench_perf_smoke(tmp_path):
    result = CliRunner().invoke(main, ["bench", "perf", "--sizes", "200", "--spread", "0", "--import-count", "0",
                                       "--out", str(tmp_path / "perf.json"), "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "perf.json").read_text())["sizes"][0]
    assert row["size"] == 200 and row["fresh_after_write"] is True
    assert row["fts5_ms_p50"] > 0 and row["numpy_ms_p50"] > 0 and row["ratio_fts_vs_fts5"] > 0


def test_bench_perf_spreads_stores_over_scopes_and_compares_with_one_scope(tmp_path):
    result = CliRunner().invoke(main, ["bench", "perf", "--sizes", "40", "--spread", "10@400",
                                       "--import-count", "0", "--out", str(tmp_path / "perf.json")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "perf.json").read_text())
    assert [(r["size"], r["scopes"]) for r in report["sizes"]] == [(40, 1), (400, 10)]
    (row,) = report["summary"]["spread_vs_single_scope"]
    assert (row["size"], row["scopes"], row["vs_size"]) == (400, 10, 40) and row["hybrid"] > 0
    assert "400 entries in 10 scopes" in result.output
    bad = CliRunner().invoke(main, ["bench", "perf", "--sizes", "40", "--spread", "ten@400"])
    assert bad.exit_code != 0 and "SCOPES@SIZE" in bad.output


def test_bench_perf_measures_both_backends_side_by_side(tmp_path, seekdb_dir):
    # Embedded seekdb is one instance per process: the bench reuses the directory the test session opened.
    from pcmem.store.seekdb.connector import Connector, parse

    Connector(parse(f"seekdb://{seekdb_dir}?database=warm"))  # make sure the session's instance is open
    result = CliRunner().invoke(main, ["bench", "perf", "--sizes", "200", "--spread", "0", "--import-count", "0",
                                       "--backends", "duckdb,seekdb", "--out", str(tmp_path / "perf.json"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "perf.json").read_text())
    assert [(r["backend"], r["size"], r["fresh_after_write"]) for r in report["sizes"]] == [
        ("duckdb", 200, True), ("seekdb", 200, True)]
    (row,) = report["comparison"]
    assert row["backend"] == "seekdb" and row["vs"] == "duckdb" and row["ratio_fts_p50"] > 0
    assert row["same_top10_vector_candidates"] == 1.0  # exact kNN on both engines: identical candidate lists


def test_bench_locomo_compares_backends(tmp_path, seekdb_dir):
    from pcmem.store.seekdb.connector import Connector, parse

    Connector(parse(f"seekdb://{seekdb_dir}?database=warm"))
    data = _locomo_file(tmp_path / "locomo.json")
    url = f"seekdb://{seekdb_dir}?database=locomo_smoke"
    try:
        result = CliRunner().invoke(main, ["bench", "locomo", "--data", str(data), "--modes", "fts", "--backends",
                                           "duckdb,seekdb", "--seekdb-store", url, "--json"])
    finally:
        Connector(parse(url)).drop_database()
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [run["backend"] for run in report["runs"]] == ["duckdb", "seekdb"]
    (row,) = report["comparison"]
    assert row["mode"] == "fts" and row["n"] == 3 and row["delta_frac@10"] == 0


def test_bench_locomo_with_the_embedding_rerank_policy(tmp_path):
    """The benchmark names the policy as a run parameter; the runtime composes it (the bench never reorders)."""
    data = _locomo_file(tmp_path / "locomo.json")
    result = CliRunner().invoke(main, ["bench", "locomo", "--data", str(data), "--modes", "hybrid", "--rerank",
                                       "embedding", "--out", str(tmp_path / "out.json"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out.json").read_text())["reports"][0]
    assert report["rerank"] == "embedding" and report["mode"] == "hybrid"
    overall = report["overall"]
    assert overall["n"] == 3 and "rerank_ms_p50" in overall and overall["rerank_requests"] == 0


def test_bench_locomo_fusion_reproduces_the_real_search_and_locomo_takes_fusion(tmp_path):
    """Issue 31: the offline fusion evaluation gives the same figures as real searches on the same store."""
    data = _locomo_file(tmp_path / "locomo.json")
    store = str(tmp_path / "locomo.duckdb")
    for fusion in ("rrf", "convex"):
        result = CliRunner().invoke(main, ["bench", "locomo", "--data", str(data), "--modes", "hybrid", "--fusion",
                                           fusion, "--store", store, "--out", str(tmp_path / f"{fusion}.json"),
                                           "--alone-sample", "0", "--json"])
        assert result.exit_code == 0, result.output
    real = {f: json.loads((tmp_path / f"{f}.json").read_text()) for f in ("rrf", "convex")}
    assert (real["convex"]["fusion"], real["rrf"]["fusion"]) == ("convex", "rrf")
    result = CliRunner().invoke(main, ["bench", "locomo-fusion", "--data", str(data), "--store", store,
                                       "--channels", str(tmp_path / "channels.jsonl"),
                                       "--out", str(tmp_path / "fusion.json"), "--json"])
    assert result.exit_code == 0, result.output
    offline = json.loads((tmp_path / "fusion.json").read_text())
    reported_on_0_to_4 = offline["folds"][1]["rows"]  # the one conversation here is conversation 0
    for fusion, label in (("rrf", "rrf"), ("convex", f"convex:{CONVEX_NORMALISATION}:alpha={CONVEX_ALPHA}")):
        grid = offline["grid_by_half"][label]
        assert reported_on_0_to_4["rrf"]["n"] == 3
        for k in ("frac@10", "frac@30"):
            assert grid[k][0] == real[fusion]["reports"][0]["overall"][k]


def test_the_fusion_tuning_rule_by_hand():
    from pcmem_bench.fusion_tune import choose, refit

    def row(at10: float, at30: float) -> dict:
        return {"n": 1, "frac@10": at10, "frac@30": at30}

    table = {"rrf": row(0.60, 0.70), "convex:min-max:alpha=0.2": row(0.66, 0.69),  # best @10, but loses @30
             "convex:min-max:alpha=0.3": row(0.64, 0.71), "convex:min-max:alpha=0.6": row(0.64, 0.72),
             "weighted_rrf:vector_weight=0.5": row(0.99, 0.99)}  # another family
    assert choose(table, "convex:min-max") == "convex:min-max:alpha=0.6"  # the tie goes to the value nearer 0.5
    assert choose({"rrf": row(0.6, 0.7), "convex:min-max:alpha=0.1": row(0.9, 0.6)}, "convex:min-max") == "rrf"
    other_half = {**table, "convex:min-max:alpha=0.6": row(0.64, 0.60)}  # the @30 floor holds on each half
    assert refit([table, other_half], "convex:min-max") == "convex:min-max:alpha=0.3"


def test_bench_threads_alternates_rounds_on_one_store(tmp_path, capsys):
    # The thread-scaling figure is the median of paired runs (1 thread, 4 threads), their order alternating, all on
    # one store that the remembers grow (python -m pcmem_bench.threads).
    import pcmem
    from pcmem_bench import threads

    path = tmp_path / "threads.duckdb"
    result = threads.scaling(path, seconds=0.2, rounds=2, kinds=("mixed", "search"))
    assert len(result["mixed"]["ratios"]) == 2 and len(result["search"]["ratios"]) == 2
    assert result["ratio"] == result["mixed"]["ratio"] and result["ops_per_second_4"] > 0
    assert result["mode"] == "fts" and len(result["load_average"]) == 2
    assert result["cpu_ms_per_op_1"] > 0 and result["cpu_ms_per_op_4"] > 0
    with pcmem.open(path, embedder=None) as runtime:
        head = runtime.memory.for_scope("scaling").head()
    assert head is not None and head.revision > 1  # the seed, then the threads' remembers
    threads.main(["--seconds", "0.1", "--rounds", "1"])
    assert json.loads(capsys.readouterr().out)["threads"] == 4


def test_the_writes_probe_reports_the_serving_peak_apart_from_the_close(tmp_path):
    """The owner's close checkpoints, which rewrites each changed table's last row group whatever the change: its
    peak follows how full that row group is (490 MB at 100,000 entries, 225 MB at 130,000), so it is reported apart
    from the peak while serving."""
    from pcmem_bench.writes import build_spread

    path = tmp_path / "spread.duckdb"
    build_spread(path, 40, 2)
    done = subprocess.run([sys.executable, "-m", "pcmem_bench.writes", "probe", str(path), "--hot", "2", "--rounds", "2"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["remembers"] == 4
    assert 0 < report["rss_after_open_mb"] <= report["peak_rss_serving_mb"] <= report["peak_rss_mb"]


def test_bench_stall_runs_end_to_end(tmp_path):
    """Every step of every kind is reported, with the references; the figures themselves are the README's."""
    result = CliRunner().invoke(main, ["bench", "stall", "--entries", "40", "--repeats", "1", "--out",
                                       str(tmp_path / "stall.json"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "stall.json").read_text())
    kinds = [(kind["variant"], kind["warm"], [step["step"] for step in kind["steps"]]) for kind in report["kinds"]]
    cold, warm = ["open", "first search", "remember", "close"], ["open", "warm", "first search", "remember", "close"]
    assert kinds == [("thread", False, cold), ("thread", True, warm), ("asyncio", False, cold), ("asyncio", True, warm)]
    assert all(kind["busy_python_worst_ms_p50"] >= 0 and step["rss_mb_p50"] > 0
               for kind in report["kinds"] for step in kind["steps"])
