"""``pcmem bench locomo``, ``locomo-report`` and ``locomo-fusion``: retrieval quality on LoCoMo through the public
API."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from pcmem import rerank_policies
from pcmem.cli import render
from pcmem.cli.progress import progress_bar
from pcmem.config import InferenceConfig
from pcmem.errors import InputError
from pcmem.rerank.port import MemoryReranker
from pcmem.rerank_policies import RERANK_POLICIES
from pcmem.settings import SEARCH_FUSIONS, SearchFusion
from pcmem_bench import csv_list
from pcmem_bench.output import write_result


@click.command()
@click.option("--data", "data_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Path to locomo10.json (CC BY-NC 4.0; bring your own copy).")
@click.option("--modes", default="fts,vector,hybrid", show_default=True, help="Search modes to compare.")
@click.option("--rerank", "reranks", default="none", show_default=True, metavar="POLICY[,POLICY...]",
              help=f"Rerank policies compared side by side on the same coarse pools: none, {', '.join(RERANK_POLICIES)}. "
                   "decision and decision-fill share one memo of the model's verdicts (each computed once; their "
                   "latency is reported at first computation).")
@click.option("--model", default=None, metavar="PROVIDER:NAME", help="Generation model for --rerank.")
@click.option("--rerank-embedder", metavar="PRESET|DIR", default=None,
              help="--rerank embedding: order by this embedder's cosine instead of each store's own.")
@click.option("--limit", type=click.IntRange(1, 50), default=10, show_default=True, help="Final hits per search.")
@click.option("--candidates", type=click.IntRange(1, 100), default=30, show_default=True,
              help="Rerank candidate limit c (coarse pool = max(limit, c)).")
@click.option("--fusion", type=click.Choice(SEARCH_FUSIONS), default="rrf", show_default=True,
              help="How every search fuses its channels: rrf (the contract's), convex or weighted-rrf (non-contract).")
@click.option("--categories", default="1,2,3,4", show_default=True)
@click.option("--conversations", default=None, help="Sample ids or 0-based indexes, comma separated (default all).")
@click.option("--questions", type=int, default=None, help="A category-stratified subset of this many questions.")
@click.option("--store", type=click.Path(dir_okay=False), default=None,
              help="DuckDB store file to ingest into and reuse (default: a temporary file). With several "
                   "embedders, one file each: NAME.<embedder>.duckdb.")
@click.option("--backends", default="duckdb", show_default=True,
              help="Storage backends to measure side by side on the same data: duckdb, seekdb or both.")
@click.option("--seekdb-store", default=None, metavar="URL",
              help="seekdb store to ingest into and reuse (default: embedded seekdb in a temporary directory).")
@click.option("--embedder", "embedders", default="minilm-l6-int8", show_default=True, metavar="PRESET[,PRESET...]",
              help="Embedders to compare side by side (each ingests its own store).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the full results as JSON here.")
@click.option("--jsonl", type=click.Path(dir_okay=False), default=None,
              help="Append each question's result here as it completes; a rerun with the same file resumes (finished "
                   "questions are reused). `pcmem bench locomo-report FILE` summarises it, also mid-run.")
@click.option("--alone-sample", type=click.IntRange(0, 100_000), default=600, show_default=True,
              help="After an ingest, texts the bare embedder embeds for the ingest ÷ embedder-alone ratio (0: skip).")
@render.json_option
def locomo(data_path: str, modes: str, reranks: str, model: str | None, rerank_embedder: str | None, limit: int,
           candidates: int, fusion: str, categories: str,
           conversations: str | None, questions: int | None, store: str | None, backends: str,
           seekdb_store: str | None, embedders: str, out: str | None, jsonl: str | None, alone_sample: int,
           as_json: bool) -> None:
    """Evidence recall on LoCoMo through the public API: modes, embedders and storage backends side by side.

    \b
    Examples:
      pcmem bench locomo --data ../shared/data/locomo/locomo10.json --modes fts,vector,hybrid --out locomo.json
      pcmem bench locomo --data locomo10.json --modes hybrid --embedder minilm-l6-int8,mpnet-base-int8
      pcmem bench locomo --data locomo10.json --backends duckdb,seekdb --questions 200
      pcmem bench locomo --data locomo10.json --modes hybrid --questions 100 --rerank none,decision,decision-fill \\
          --model llama-cpp:qwen2.5-coder-1.5b-instruct --jsonl rerank.jsonl
    """
    from pcmem_bench import locomo as bench_locomo
    from pcmem_bench.locomo_data import load
    from pcmem_bench.perf import BACKENDS

    backend_list = csv_list(backends)
    if not backend_list or any(b not in BACKENDS for b in backend_list) or len(set(backend_list)) != len(backend_list):
        raise InputError(f"--backends takes distinct names from {', '.join(BACKENDS)}, got {backends!r}")
    convs = load(data_path)
    if conversations:
        wanted = set(csv_list(conversations))
        convs = [c for i, c in enumerate(convs) if c.sample_id in wanted or str(i) in wanted]
    chosen = bench_locomo.select_questions(convs, csv_list(categories, int), questions)
    if not chosen:
        raise InputError("no questions match the chosen categories and conversations")
    policies = csv_list(reranks)
    known = ("none", *rerank_policies.policy_names())
    unknown = [p for p in policies if p not in known]
    if not policies or unknown or len(set(policies)) != len(policies):
        raise InputError(f"--rerank takes distinct names from {', '.join(known)}; got {reranks!r}")
    second = {p for p in policies if p != "none" and rerank_policies.named(p).takes_embedder}
    if rerank_embedder is not None and not second:
        raise InputError("--rerank-embedder applies to the embedding policy: add embedding to --rerank")
    labels = {p: f"{p}:{rerank_embedder}" if p in second and rerank_embedder else p for p in policies}
    matrix = bench_locomo.Matrix(
        conversations=convs, questions=chosen, modes=csv_list(modes), embedders=csv_list(embedders), backends=backend_list,
        reranks=list(labels.values()), limit=limit, candidates=candidates, store=store, seekdb_store=seekdb_store,
        inference=InferenceConfig.from_env(generation_model=model), alone_sample=alone_sample,
        fusion=cast(SearchFusion, fusion),
    )
    rerankers: dict[str, MemoryReranker | None] = {"none": None}
    model_policies = [p for p in policies if p != "none"]
    if model_policies:
        from pcmem.compose.rerankers import build_rerankers

        with progress_bar("verifying model", enabled=not as_json, bytes_=True) as advance:
            built = build_rerankers(model_policies, matrix.inference, advance, rerank_embedder=rerank_embedder,
                                    share_decisions=True)
        rerankers.update({labels[p]: reranker for p, reranker in built.items()})
    log = bench_locomo.ResultLog(jsonl)
    result = bench_locomo.run_matrix(matrix, rerankers, lambda label: progress_bar(label, enabled=not as_json), log)
    result["data"] = str(data_path)
    runs = result["runs"]
    if write_result(result, out, as_json):
        return
    for run_ in runs:
        if len(runs) > 1:
            rate, measured = run_["ingest_entries_per_s"], run_["ingest"]
            ingest = "store reused, nothing ingested" if rate is None else f"ingest {rate} entries/s"
            if measured.get("embedder_alone_entries_per_s"):
                ingest += (f", embedder alone {measured['embedder_alone_entries_per_s']:.1f}/s = "
                           f"{measured['ratio_ingest_vs_embedder']:.2f}x")
            click.echo(f"\n## {run_['backend']}, {run_['embedder']} ({ingest})\n")
        click.echo(bench_locomo.markdown(run_["reports"]))
    if result["comparison"]:
        click.echo("\n" + bench_locomo.comparison_markdown(result["comparison"]))
    rerank_rows = [r for r in result["reports"] if r["overall"].get("rerank_ms_p50") is not None]
    if rerank_rows:
        click.echo("\n" + bench_locomo.rerank_markdown(rerank_rows))
    click.echo(f"\n{len(chosen)} questions, fusion {fusion}, {result['wall_seconds']} s wall; evidence ids repaired: "
               f"{len(result['evidence_repaired'])}, unresolved (dropped): {len(result['evidence_unresolved'])}")


@click.command("locomo-report")
@click.argument("jsonl", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the reports as JSON here.")
@render.json_option
def locomo_report(jsonl: str, out: str | None, as_json: bool) -> None:
    """Summarise a `bench locomo --jsonl` file (also while it runs, or after it was cut short: n is what was done).

    \b
    Example:
      pcmem bench locomo-report rerank.jsonl
    """
    from pcmem_bench import locomo as bench_locomo

    reports = bench_locomo.ResultLog(jsonl).reports()
    if write_result(reports, out, as_json):
        return
    click.echo(bench_locomo.markdown(reports))
    rerank_rows = [r for r in reports if r["overall"].get("rerank_ms_p50") is not None]
    if rerank_rows:
        click.echo("\n" + bench_locomo.rerank_markdown(rerank_rows))


@click.command("locomo-fusion")
@click.option("--data", "data_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Path to locomo10.json (CC BY-NC 4.0; bring your own copy).")
@click.option("--embedder", default="minilm-l6-int8", show_default=True, metavar="PRESET|DIR")
@click.option("--store", type=click.Path(dir_okay=False), required=True,
              help="DuckDB store file to ingest into (once) and search.")
@click.option("--channels", "channels_path", type=click.Path(dir_okay=False), required=True,
              help="Each question's admitted channel lists, as JSON lines: written after fetching; when the file "
                   "exists it is reused and nothing is searched.")
@click.option("--categories", default="1,2,3,4", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the full results as JSON here.")
@render.json_option
def locomo_fusion(data_path: str, embedder: str, store: str, channels_path: str, categories: str, out: str | None,
                  as_json: bool) -> None:
    """Tune the non-contract fusions on LoCoMo conversations 0-4, report on 5-9, and the other way round.

    \b
    Examples:
      pcmem bench locomo-fusion --data locomo10.json --store locomo.minilm.duckdb --channels minilm.jsonl
    """
    from pcmem.compose.runtime import SyncRuntime
    from pcmem_bench import fusion_tune
    from pcmem_bench import locomo as bench_locomo
    from pcmem_bench.locomo_data import load

    if Path(channels_path).exists():
        fetched = fusion_tune.load_fetched(channels_path)
    else:
        convs = load(data_path)
        chosen = bench_locomo.select_questions(convs, csv_list(categories, int), None)
        with SyncRuntime.open(store, embedder=embedder) as runtime, \
                progress_bar("fetching channels", enabled=not as_json) as advance:
            fetched = fusion_tune.fetch(runtime, convs, chosen, advance)
        fusion_tune.save(fetched, channels_path)
    result = fusion_tune.evaluate(fetched)
    result.update(embedder=embedder, data=str(data_path))
    if write_result(result, out, as_json, shown={k: v for k, v in result.items() if k != "grid_by_half"}):
        return
    click.echo(fusion_tune.markdown(result))
    click.echo(f"\n{result['questions']} questions; channel fetch per search p50 {result['fetch_ms_p50']:.1f} ms, "
               f"p95 {result['fetch_ms_p95']:.1f} ms")
