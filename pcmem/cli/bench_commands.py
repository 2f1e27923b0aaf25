"""``pcmem bench``: retrieval quality (LoCoMo) and rerank latency against the llama.cpp floor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import click

from pcmem.cli import bench_embed_speed, bench_pool, render
from pcmem.cli.progress import progress_bar
from pcmem.errors import InputError
from pcmem.rerank.port import MemoryReranker
from pcmem.settings import SEARCH_FUSIONS, InferenceConfig, SearchFusion
from pcmem.types.rerank import RERANK_POLICIES, RerankPolicy


def _csv(value: str, cast=str) -> list:  # noqa: ANN001
    try:
        return [cast(item.strip()) for item in value.split(",") if item.strip()]
    except ValueError:
        raise InputError(f"cannot parse list {value!r}") from None


@click.group(invoke_without_command=True)
@render.json_option
@click.pass_context
def bench(ctx: click.Context, as_json: bool) -> None:
    """Benchmarks that print ratios against references measured in the same run.

    \b
    Examples:
      pcmem bench                     # list the benchmarks
      pcmem bench locomo --data locomo10.json --questions 40
      pcmem bench rerank --models smollm2-135m-instruct
    """
    if ctx.invoked_subcommand is not None:
        return
    rows = [{"name": name, "summary": command.get_short_help_str(80)} for name, command in sorted(bench.commands.items())]
    if as_json:
        render.emit_json(rows)
    else:
        render.table(None, ("benchmark", "what it measures"), [(r["name"], r["summary"]) for r in rows])


@bench.command()
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
              help="How every search fuses its channels: rrf (the contract's) or convex (non-contract).")
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
    from pcmem.bench import locomo as bench_locomo
    from pcmem.bench.locomo_data import load
    from pcmem.bench.perf import BACKENDS

    backend_list = _csv(backends)
    if not backend_list or any(b not in BACKENDS for b in backend_list) or len(set(backend_list)) != len(backend_list):
        raise InputError(f"--backends takes distinct names from {', '.join(BACKENDS)}, got {backends!r}")
    convs = load(data_path)
    if conversations:
        wanted = set(_csv(conversations))
        convs = [c for i, c in enumerate(convs) if c.sample_id in wanted or str(i) in wanted]
    chosen = bench_locomo.select_questions(convs, _csv(categories, int), questions)
    if not chosen:
        raise InputError("no questions match the chosen categories and conversations")
    policies = _csv(reranks)
    unknown = [p for p in policies if p not in ("none", *RERANK_POLICIES)]
    if not policies or unknown or len(set(policies)) != len(policies):
        raise InputError(f"--rerank takes distinct names from none, {', '.join(RERANK_POLICIES)}; got {reranks!r}")
    if rerank_embedder is not None and "embedding" not in policies:
        raise InputError("--rerank-embedder applies to the embedding policy: add embedding to --rerank")
    labels = {p: f"{p}:{rerank_embedder}" if p == "embedding" and rerank_embedder else p for p in policies}
    matrix = bench_locomo.Matrix(
        conversations=convs, questions=chosen, modes=_csv(modes), embedders=_csv(embedders), backends=backend_list,
        reranks=list(labels.values()), limit=limit, candidates=candidates, store=store, seekdb_store=seekdb_store,
        inference=InferenceConfig.from_env(generation_model=model), alone_sample=alone_sample,
        fusion=cast(SearchFusion, fusion),
    )
    rerankers: dict[str, MemoryReranker | None] = {"none": None}
    model_policies = [cast(RerankPolicy, p) for p in policies if p != "none"]
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
    if out:
        Path(out).write_text(json.dumps(result, indent=2))
    if as_json:
        render.emit_json(result)
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


@bench.command("locomo-report")
@click.argument("jsonl", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the reports as JSON here.")
@render.json_option
def locomo_report(jsonl: str, out: str | None, as_json: bool) -> None:
    """Summarise a `bench locomo --jsonl` file (also while it runs, or after it was cut short: n is what was done).

    \b
    Example:
      pcmem bench locomo-report rerank.jsonl
    """
    from pcmem.bench import locomo as bench_locomo

    reports = bench_locomo.ResultLog(jsonl).reports()
    if out:
        Path(out).write_text(json.dumps(reports, indent=2))
    if as_json:
        render.emit_json(reports)
        return
    click.echo(bench_locomo.markdown(reports))
    rerank_rows = [r for r in reports if r["overall"].get("rerank_ms_p50") is not None]
    if rerank_rows:
        click.echo("\n" + bench_locomo.rerank_markdown(rerank_rows))


@bench.command("rerank")
@click.option("--models", default="smollm2-135m-instruct", show_default=True,
              help="Presets (or GGUF paths) to measure, comma separated.")
@click.option("--policies", default="listwise,decision", show_default=True)
@click.option("--repeats", type=int, default=3, show_default=True)
@render.json_option
def rerank_(models: str, policies: str, repeats: int, as_json: bool) -> None:
    """Rerank latency for a 30-candidate pool vs the llama.cpp floor (prefill + decode of the same tokens).

    \b
    Example:
      pcmem bench rerank --models smollm2-135m-instruct,qwen2.5-coder-1.5b-instruct
    """
    from pcmem.bench.rerank_bench import as_row, bench_decision, bench_listwise

    rows = []
    for name in _csv(models):
        if "listwise" in policies:
            rows.append(as_row(bench_listwise(name, repeats)))
        if "decision" in policies:
            row, wall = bench_decision(name)
            rows.append({**as_row(row), "rerank_30_wall_s": round(wall, 2)})
    if as_json:
        render.emit_json(rows)
        return
    render.table("rerank latency vs the llama.cpp floor (same tokens, same run)",
                 ("model", "policy", "prompt tok", "out tok", "measured s", "floor s", "ratio", "30-cand wall s"),
                 [(r["model"], r["policy"], r["prompt_tokens"], r["output_tokens"], f"{r['measured_s']:.3f}",
                   f"{r['floor_s']:.3f}", f"{r['ratio']:.2f}", r.get("rerank_30_wall_s", "")) for r in rows])


@bench.command()
@click.option("--sizes", default="1000,10000", show_default=True, help="Entries per store, comma separated.")
@click.option("--spread", default="100", show_default=True, metavar="SCOPES[@SIZE][,...]",
              help="Also load stores spread over many scopes: SCOPES alone uses the largest size, SCOPES@SIZE its own "
                   "(e.g. 100@100000,1000@1000000); 0 skips.")
@click.option("--import-count", type=int, default=1000, show_default=True,
              help="Texts for the bulk-import-with-the-real-embedder measurement (0: skip).")
@click.option("--backends", default="duckdb", show_default=True,
              help="Storage backends to measure on the same data: duckdb, seekdb or both (ratios vs the first).")
@click.option("--embedder", "embedders", default="minilm-l6-int8", show_default=True, metavar="PRESET[,PRESET...]",
              help="Embedders for the bulk-import measurement, compared side by side.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the results as JSON here.")
@render.json_option
def perf(sizes: str, spread: str, import_count: int, backends: str, embedders: str, out: str | None,
         as_json: bool) -> None:
    """Write cost and search latency vs SQLite FTS5 and numpy brute force, measured in the same run.

    \b
    Examples:
      OPENBLAS_NUM_THREADS=1 pcmem bench perf --sizes 1000,10000,100000 --out perf.json
      pcmem bench perf --sizes 1000 --spread 1000@1000000 --import-count 0
      pcmem bench perf --sizes 1000,10000 --backends duckdb,seekdb --spread 0 --import-count 0
      pcmem bench perf --sizes 1000 --spread 0 --embedder minilm-l6-int8,mpnet-base-int8,mpnet-base
    """
    from pcmem.bench import perf as bench_perf

    backend_list = _csv(backends)
    if not backend_list or len(set(backend_list)) != len(backend_list):
        raise InputError(f"--backends takes distinct names from {', '.join(bench_perf.BACKENDS)}, got {backends!r}")
    size_list = _csv(sizes, int)
    result = bench_perf.run(size_list, import_count, bench_perf.parse_spread(spread, size_list), backend_list,
                            _csv(embedders))
    if out:
        Path(out).write_text(json.dumps(result, indent=2))
    if as_json:
        render.emit_json(result)
        return
    render.table("latency p50 ms (p95) — pcmem vs references from the same data, same run",
                 ("backend", "size", "scopes", "remember", "÷ FTS5 insert", "fts", "FTS5", "ratio", "vector", "numpy", "ratio",
                  "hybrid", "ratio", "B/entry"),
                 [(r["backend"], r["size"], r["scopes"], f"{r['remember_ms_p50']:.1f} ({r['remember_ms_p95']:.1f})",
                   f"{r['ratio_remember_vs_fts5_insert']:.1f}x",
                   f"{r['fts_ms_p50']:.1f}", f"{r['fts5_ms_p50']:.2f}", f"{r['ratio_fts_vs_fts5']:.1f}x",
                   f"{r['vector_ms_p50']:.1f}", f"{r['numpy_ms_p50']:.2f}", f"{r['ratio_vector_vs_numpy']:.1f}x",
                   f"{r['hybrid_ms_p50']:.1f}", f"{r['ratio_hybrid_vs_both']:.1f}x", r["file_bytes_per_entry"] or "")
                  for r in result["sizes"]])
    if result["comparison"]:
        render.table("p50 latency ratio vs the first backend, and top-10 agreement on the same queries",
                     ("backend", "vs", "size", "scopes", "remember", "fts", "vector", "hybrid", "fts overlap@10",
                      "hybrid overlap@10", "same vector candidates"),
                     [(c["backend"], c["vs"], c["size"], c["scopes"], f"{c['ratio_remember_p50']:.2f}x",
                       f"{c['ratio_fts_p50']:.2f}x", f"{c['ratio_vector_p50']:.2f}x", f"{c['ratio_hybrid_p50']:.2f}x",
                       f"{c['overlap@10_fts']:.2f}", f"{c['overlap@10_hybrid']:.2f}",
                       f"{c['same_top10_vector_candidates']:.2f}")
                      for c in result["comparison"]])
    summary = result["summary"]
    for row in summary["spread_vs_single_scope"]:
        click.echo(f"{row['size']:,} entries in {row['scopes']:,} scopes: search p50 ÷ the {row['vs_size']:,}-entry "
                   f"single-scope store's — fts {row['fts']:.2f}x, vector {row['vector']:.2f}x, "
                   f"hybrid {row['hybrid']:.2f}x")
    if summary["remember_ratio_largest_vs_smallest"] is not None:
        click.echo(f"remember p50, largest ÷ smallest size: {summary['remember_ratio_largest_vs_smallest']:.2f}x")
    for imp in result["imports"]:
        click.echo(f"{imp['embedder']}: bulk import {imp['import_per_s']:.1f}/s vs embedder alone "
                   f"{imp['embedder_alone_per_s']:.1f}/s = {imp['ratio_import_vs_embedder']:.2f}x")
    click.echo("FTS5 reference: one store-wide table with a scope column, filtered to the scope, where there are "
               "several scopes; fts5_scope_only_ms_p50 in --json/--out is the table of that scope's rows alone")
    click.echo(f"peak RSS {result['peak_rss_mb']} MB")


@bench.command("serve")
@click.option("--entries", type=click.IntRange(4, 100_000), default=400, show_default=True,
              help="Entries seeded over 4 scopes before measuring.")
@click.option("--repeats", type=click.IntRange(1, 10_000), default=100, show_default=True,
              help="Sequential searches per transport (in-process, HTTP, MCP).")
@click.option("--clients", type=click.IntRange(1, 256), default=16, show_default=True,
              help="Concurrent clients in the load run.")
@click.option("--requests", type=click.IntRange(1, 10_000), default=100, show_default=True,
              help="Mixed requests per client (60% search, 25% remember, 15% CAS revise).")
@click.option("--embedder", "embedder_choice", default=None, metavar="PRESET",
              help="Embedder of the benchmark store (default: minilm-l6-int8).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the results as JSON here.")
@render.json_option
def serve_(entries: int, repeats: int, clients: int, requests: int, embedder_choice: str | None, out: str | None,
           as_json: bool) -> None:
    """Search latency through HTTP and MCP vs in-process (same run), and a loopback load run.

    \b
    Examples:
      pcmem bench serve
      pcmem bench serve --repeats 300 --clients 16 --requests 100 --out serve.json
    """
    from pcmem.bench import serve_bench
    from pcmem.serve import require_serve

    require_serve()
    result = serve_bench.run(entries, repeats, clients, requests, embedder_choice)
    if out:
        Path(out).write_text(json.dumps(result, indent=2))
    if as_json:
        render.emit_json(result)
        return
    latency = result["latency"]
    render.table(f"warm search, {result['entries']} entries, {result['repeats']} sequential searches each",
                 ("path", "p50 ms", "p95 ms", "p50 ratio vs in-process"),
                 [("in-process", latency["in_process"]["p50_ms"], latency["in_process"]["p95_ms"], "1.00x"),
                  ("HTTP v1", latency["http"]["p50_ms"], latency["http"]["p95_ms"], f"{result['ratio_http_p50']:.2f}x"),
                  ("MCP /mcp", latency["mcp"]["p50_ms"], latency["mcp"]["p95_ms"], f"{result['ratio_mcp_p50']:.2f}x")])
    load = result["load"]
    render.table(f"load: {load['clients']} clients x {load['requests_per_client']} mixed requests, "
                 f"{load['throughput_rps']} req/s",
                 ("requests", "n", "p50 ms", "p95 ms"),
                 [(kind, load[kind]["n"], load[kind]["p50_ms"], load[kind]["p95_ms"])
                  for kind in ("all", "search", "remember", "revise")])
    render.table("outcomes", ("request status code", "count"), list(load["outcomes"].items()))
    click.echo(f"acknowledged writes {load['acknowledged_writes']}, present afterwards {load['present_afterwards']}")


@bench.command()
@click.option("--trials", type=int, default=20, show_default=True)
@render.json_option
def crash(trials: int, as_json: bool) -> None:
    """SIGKILL writers (a remember/revise stream, and `pcmem import`) at random points; verify the store each time.

    \b
    Example:
      pcmem bench crash --trials 20
    """
    import dataclasses
    import tempfile

    from pcmem.bench import crash as bench_crash

    with tempfile.TemporaryDirectory(prefix="pcmem-crash-") as tmp:
        report = bench_crash.run(trials, Path(tmp))
    if as_json:
        render.emit_json(dataclasses.asdict(report))
    else:
        click.echo(f"{report.trials} trials: {report.acknowledged_writes_verified} acknowledged writes verified, "
                   f"{report.imports_killed_midway} imports killed midway, {len(report.failures)} failures")
        for failure in report.failures:
            click.echo(f"  - {failure}")
    if report.failures:
        raise SystemExit(1)


@bench.command()
@click.option("--quick", is_flag=True, help="A small run (CI, development): a few hundred hostile cases, 1 kill round.")
@click.option("--hostile-cases", type=int, default=None, help="Hypothesis cases (default 10,000; --quick: 300).")
@click.option("--kill-rounds", type=int, default=None,
              help="Rounds of 4 SIGKILL trials (revise stream, import, reindex --embedder, damaged WAL); default 5.")
@render.json_option
def chaos(quick: bool, hostile_cases: int | None, kill_rounds: int | None, as_json: bool) -> None:
    """The safety campaign (issue 16): threads, runtimes, async tasks, processes, SIGKILLs and hostile input.

    Each scenario prints operations, acknowledged writes, acknowledged writes found afterwards (must be equal),
    typed errors by class, untyped errors (must be 0) and `check` (must pass); then the throughput of 4 threads vs
    1 on one runtime. Exits 1 when a scenario fails.

    \b
    Examples:
      pcmem bench chaos --quick
      pcmem bench chaos --json > chaos.json
    """
    import dataclasses
    import tempfile

    from pcmem.bench import chaos as bench_chaos

    plan = bench_chaos.QUICK if quick else bench_chaos.Plan()
    if hostile_cases is not None:
        plan = dataclasses.replace(plan, hostile_cases=hostile_cases)
    if kill_rounds is not None:
        plan = dataclasses.replace(plan, kill_rounds=kill_rounds)
    say = (lambda _line: None) if as_json else (lambda line: click.echo(f"  … {line}", err=True))
    with tempfile.TemporaryDirectory(prefix="pcmem-chaos-") as tmp:
        from pcmem.cli import main

        result = bench_chaos.campaign(Path(tmp), plan, main, say)
    if as_json:
        render.emit_json(result)
    else:
        for scenario in result["scenarios"]:
            typed = ", ".join(f"{name} {count}" for name, count in scenario["typed_errors"].items()) or "none"
            click.echo(f"{'ok  ' if scenario['ok'] else 'FAIL'} {scenario['scenario']}  ({scenario['seconds']:.0f} s)\n"
                       f"     operations {scenario['operations']}, acknowledged {scenario['acknowledged']}, found "
                       f"{scenario['found']}, untyped {scenario['untyped_error_count']}, check {scenario['checks']} "
                       f"run / {len(scenario['checks_failed'])} failed\n     typed errors: {typed}")
            for problem in scenario["untyped_errors"][:3] + scenario["checks_failed"][:3]:
                click.echo(f"     ! {problem[:300]}")
        figure = result["scaling"]
        click.echo(f"4 threads vs 1 thread, mixed search/remember on one runtime: {figure['ops_per_second_1']} → "
                   f"{figure['ops_per_second_4']} ops/s = {figure['ratio']}x")
    if not result["ok"]:
        raise SystemExit(1)


@bench.command("owner")
@click.option("--entries", type=click.IntRange(1, 100_000), default=200, show_default=True)
@click.option("--repeats", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="Calls (MCP) and processes (CLI) per figure.")
@click.option("--rounds", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="Times the owner is killed with SIGKILL under load.")
@render.json_option
def owner_(entries: int, repeats: int, rounds: int, as_json: bool) -> None:
    """One store, many processes: two MCP hosts vs one, CLI beside an owner vs cold, SIGKILL of the owner.

    \b
    Examples:
      pcmem bench owner --repeats 5 --rounds 5
      pcmem bench owner --rounds 20 --json
    """
    from pcmem.bench import owner as bench_owner

    result = bench_owner.run(entries, repeats, rounds)
    if as_json:
        render.emit_json(result)
        return
    if result["mcp"] is not None:
        for tool, row in result["mcp"].items():
            click.echo(f"MCP {tool}: one host p50 {row['one_host_p50_ms']} ms, second host {row['second_host_p50_ms']} "
                       f"ms ({row['ratio_two_vs_one']}x; target <= 1.3)")
    for mode, row in result["cli_search"].items():
        click.echo(f"CLI search --mode {mode}: cold p50 {row['cold_p50_ms']} ms, beside an owner "
                   f"{row['beside_owner_p50_ms']} ms ({row['ratio_beside_vs_cold']}x; target <= 0.4 and <= 250 ms)")
    kill = result["kill"]
    click.echo(f"SIGKILL x{kill['rounds']}: a client owned the file after p50 {kill['takeover_p50_ms']} ms, max "
               f"{kill['takeover_max_ms']} ms (target <= 2000); acknowledged {kill['acknowledged']}, lost "
               f"{kill['lost']}, errors {kill['error_count']}, entries not writable {kill['entries_not_writable']}")


def register(group: click.Group) -> None:
    group.add_command(bench)


def _register_startup(bench: click.Group) -> None:
    @bench.command()
    @click.option("--entries", type=int, default=300, show_default=True, help="Entries in the measured store.")
    @click.option("--repeats", type=int, default=7, show_default=True, help="Fresh processes per figure (p50).")
    @click.option("--out", type=click.Path(dir_okay=False), help="Also write the result as JSON.")
    @render.json_option
    def startup(entries: int, repeats: int, out: str | None, as_json: bool) -> None:
        """A cold CLI search vs the floors of Python + DuckDB (+ the ONNX session), measured in the same run.

        \b
        Example:
          OPENBLAS_NUM_THREADS=1 pcmem bench startup --repeats 7
        """
        from pcmem.bench import startup as bench_startup

        result = bench_startup.run(entries, repeats)
        if out:
            Path(out).write_text(json.dumps(result, indent=2))
        if as_json:
            render.emit_json(result)
            return
        p50 = result["p50_ms"]
        render.table("cold CLI p50 ms — fresh processes, floors from the same run",
                     ("python", "floor (duckdb + query)", "model floor (session + 1 query)", "pcmem fts", "fts ÷ floor",
                      "pcmem hybrid", "hybrid budget (floor + 1.5×model)", "import pcmem"),
                     [(f"{p50['python']:.0f}", f"{p50['floor']:.0f}", f"{p50['model']:.0f}", f"{p50['fts']:.0f}",
                       f"{result['ratio_fts_vs_floor']:.2f}x", f"{p50['hybrid']:.0f}",
                       f"{result['hybrid_budget_ms']:.0f}", f"{p50['import']:.0f}")])
        heavy = result["import_pcmem_heavy_modules"]
        click.echo(f"import pcmem pulled in: {', '.join(heavy) if heavy else 'none of ' + ', '.join(bench_startup.HEAVY)}")
        click.echo(f"load average {result['load_average']} on {result['cpu_count']} CPUs")


_register_startup(bench)
bench_pool.register(bench)
bench_embed_speed.register(bench)


@bench.command("locomo-fusion")
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
    from pcmem.bench import fusion_tune
    from pcmem.bench import locomo as bench_locomo
    from pcmem.bench.locomo_data import load
    from pcmem.compose.runtime import open_sync

    if Path(channels_path).exists():
        fetched = fusion_tune.load_fetched(channels_path)
    else:
        convs = load(data_path)
        chosen = bench_locomo.select_questions(convs, _csv(categories, int), None)
        with open_sync(store, embedder=embedder) as runtime, \
                progress_bar("fetching channels", enabled=not as_json) as advance:
            fetched = fusion_tune.fetch(runtime, convs, chosen, advance)
        fusion_tune.save(fetched, channels_path)
    result = fusion_tune.evaluate(fetched)
    result.update(embedder=embedder, data=str(data_path))
    if out:
        Path(out).write_text(json.dumps(result, indent=2))
    if as_json:
        render.emit_json({k: v for k, v in result.items() if k != "grid_by_half"})
        return
    click.echo(fusion_tune.markdown(result))
    click.echo(f"\n{result['questions']} questions; channel fetch per search p50 {result['fetch_ms_p50']:.1f} ms, "
               f"p95 {result['fetch_ms_p95']:.1f} ms")
