"""``pcmem bench rerank``, ``perf``, ``serve`` and ``startup``: latency and cost against references measured in the
same run (the llama.cpp floor, SQLite FTS5 and numpy, in-process search, bare Python + DuckDB)."""

from __future__ import annotations

import click

from pcmem.cli import render
from pcmem.errors import InputError
from pcmem_bench import csv_list
from pcmem_bench.output import write_result


@click.command("rerank")
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
    from pcmem_bench.rerank_bench import as_row, bench_decision, bench_listwise

    rows = []
    for name in csv_list(models):
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


@click.command()
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
    from pcmem_bench import perf as bench_perf

    backend_list = csv_list(backends)
    if not backend_list or len(set(backend_list)) != len(backend_list):
        raise InputError(f"--backends takes distinct names from {', '.join(bench_perf.BACKENDS)}, got {backends!r}")
    size_list = csv_list(sizes, int)
    result = bench_perf.run(size_list, import_count, bench_perf.parse_spread(spread, size_list), backend_list,
                            csv_list(embedders))
    if write_result(result, out, as_json):
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


@click.command("serve")
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
    from pcmem.serve import require_serve
    from pcmem_bench import serve_bench

    require_serve()
    result = serve_bench.run(entries, repeats, clients, requests, embedder_choice)
    if write_result(result, out, as_json):
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


@click.command()
@click.option("--entries", type=int, default=300, show_default=True, help="Entries in the measured store.")
@click.option("--repeats", type=int, default=7, show_default=True, help="Fresh processes per figure (p50).")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the result as JSON.")
@render.json_option
def startup(entries: int, repeats: int, out: str | None, as_json: bool) -> None:
    """A cold CLI search, owner-less and as a running owner's client, vs the floors of Python + DuckDB (+ the ONNX
    session), measured in the same run.

    \b
    Example:
      OPENBLAS_NUM_THREADS=1 pcmem bench startup --repeats 7
    """
    from pcmem_bench import startup as bench_startup

    result = bench_startup.run(entries, repeats)
    if write_result(result, out, as_json):
        return
    p50 = result["p50_ms"]
    render.table("cold CLI p50 ms — fresh processes, floors from the same run",
                 ("python", "floor (duckdb + query)", "model floor (session + 1 query)", "pcmem fts", "fts ÷ floor",
                  "client fts (owner runs)", "client ÷ floor", "pcmem hybrid", "hybrid budget (floor + 1.5×model)",
                  "import pcmem"),
                 [(f"{p50['python']:.0f}", f"{p50['floor']:.0f}", f"{p50['model']:.0f}", f"{p50['fts']:.0f}",
                   f"{result['ratio_fts_vs_floor']:.2f}x", f"{p50['client_fts']:.0f}",
                   f"{result['ratio_client_fts_vs_floor']:.2f}x", f"{p50['hybrid']:.0f}",
                   f"{result['hybrid_budget_ms']:.0f}", f"{p50['import']:.0f}")])
    click.echo(f"CPU time (user + system) p50: fts ÷ floor {result['cpu_ratio_fts_vs_floor']:.2f}x, client ÷ floor "
               f"{result['cpu_ratio_client_fts_vs_floor']:.2f}x (steadier than wall time on a loaded machine)")
    imports = result["fts_import_ms_by_package"]
    click.echo(f"fts call's imports, ms by package (least of {repeats} runs): "
               + ", ".join(f"{package} {ms:g}" for package, ms in list(imports.items())[:12])
               + f"; all {sum(imports.values()):.0f}")
    client = result["client_fts_import_ms_by_package"]
    click.echo("client fts call's imports, ms by package: " + ", ".join(f"{package} {ms:g}" for package, ms in
                                                                       list(client.items())[:8])
               + f"; all {sum(client.values()):.0f}")
    heavy = result["import_pcmem_heavy_modules"]
    click.echo(f"import pcmem pulled in: {', '.join(heavy) if heavy else 'none of ' + ', '.join(bench_startup.HEAVY)}")
    click.echo(f"load average {result['load_average']} on {result['cpu_count']} CPUs")

