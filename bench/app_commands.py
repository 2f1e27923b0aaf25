"""``pcmem bench stall``: what pcmem's calls cost an app around them (its UI thread, its asyncio loop)."""

from __future__ import annotations

from pathlib import Path

import click

from pcmem.cli import render
from pcmem_bench.output import write_result

_WARM_UPS = {"no": [False], "yes": [True], "both": [False, True]}


@click.command("stall")
@click.option("--entries", type=click.IntRange(1, 1_000_000), default=10_000, show_default=True,
              help="Entries in the one scope searched.")
@click.option("--repeats", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Fresh processes per kind of run (the median and the worst are reported).")
@click.option("--variants", type=click.Choice(["thread", "asyncio", "both"]), default="both", show_default=True,
              help="A worker thread beside a UI thread, or open_async's calls on an asyncio loop.")
@click.option("--warm-up", "warm_up", type=click.Choice(sorted(_WARM_UPS)), default="both", show_default=True,
              help="Whether runtime.warm(scopes=...) runs between open and the first search.")
@click.option("--store", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Measure copies of this store (its scope 'bench') instead of building one.")
@click.option("--python", "python", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Run the probes with this interpreter (another install of pcmem: before/after a change).")
@click.option("--baseline", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Also run the kinds without a warm-up with this interpreter (another install of pcmem), "
                   "alternating with these runs.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the results as JSON here.")
@render.json_option
def stall(entries: int, repeats: int, variants: str, warm_up: str, store: Path | None, python: str | None,
          baseline: str | None, out: str | None, as_json: bool) -> None:
    """The longest stall of an app's UI thread / asyncio loop during each call, and RSS after it, vs the same
    ticker with no work and beside plain Python (same process); "held": less the ticker's own wait for a CPU.

    \b
    Examples:
      pcmem bench stall
      pcmem bench stall --entries 10000 --repeats 5 --variants thread --warm-up no --out stall.json
      pcmem bench stall --store stall.duckdb --baseline ../main/.venv/bin/python  # before/after a change
    """
    from pcmem_bench import stall as bench_stall

    chosen = list(bench_stall.VARIANTS) if variants == "both" else [variants]
    result = bench_stall.run(entries, repeats, chosen, _WARM_UPS[warm_up], store, python, baseline)
    if write_result(result, out, as_json):
        return
    for kind in result["kinds"]:
        title = (f"{kind['variant']}{' + warm' if kind['warm'] else ''} ({kind['python']}): longest stall of a 10 ms ticker, "
                 f"{result['entries']:,} entries, {result['repeats']} processes; references: no work "
                 f"{kind['reference_worst_ms_p50']} ms, a worker running plain Python "
                 f"{kind['busy_python_worst_ms_p50']} ms (held {kind['busy_python_worst_held_ms_p50']} ms); "
                 f"RSS before open {kind['rss_before_open_mb_p50']} MB")
        render.table(title, ("step", "stall p50 ms", "stall max ms", "held p50 ms", "held max ms",
                             f"held ≤ {result['budget_ms']:g} ms", "longest collection ms", "took p50 ms",
                             "RSS after MB"),
                     [(s["step"], s["stall_ms_p50"], s["stall_ms_max"], s["held_ms_p50"], s["held_ms_max"],
                       "yes" if s["held_ms_max"] <= result["budget_ms"] else "NO", s["collection_ms_max"],
                       s["took_ms_p50"], s["rss_mb_p50"])
                      for s in kind["steps"]])
    click.echo(f"load average {result['load_average']} → "
               f"{result['load_average_after']} on {result['cpu_count']} CPUs")
