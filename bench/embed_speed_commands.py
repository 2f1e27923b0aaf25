"""``pcmem bench embed-speed``: EmbeddingGemma through pcmem vs the bare llama.cpp call, alone and beside a busy
process, and through a store (issue #30)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pcmem.cli import render


def register(bench: click.Group) -> None:
    @bench.command("embed-speed")
    @click.option("--rounds", type=int, default=7, show_default=True, help="Interleaved rounds per figure (median).")
    @click.option("--busy", type=int, default=1, show_default=True,
                  help="Competing busy processes for the second set of rounds (0: skip it).")
    @click.option("--threads", type=int, default=None, help="llama.cpp threads (default: the preset's choice).")
    @click.option("--out", type=click.Path(dir_okay=False), default=None, help="Also write the result as JSON.")
    @render.json_option
    def embed_speed(rounds: int, busy: int, threads: int | None, out: str | None, as_json: bool) -> None:
        """EmbeddingGemma: pcmem's embedding vs bare Llama.embed on short, medium and 8 KB texts (needs the
        embeddinggemma-300m preset prepared).

        \b
        Example:
          pcmem bench embed-speed --rounds 7 --busy 1
        """
        from pcmem_bench import embed_speed as bench_embed_speed

        result = bench_embed_speed.run(rounds, busy, threads)
        if out:
            Path(out).write_text(json.dumps(result, indent=2))
        if as_json:
            render.emit_json(result)
            return
        click.echo(f"threads {result['threads']} of {result['cpu_count']} CPUs, OMP_WAIT_POLICY "
                   f"{result['omp_wait_policy']}, load before {result['load_before']:.1f}")
        for name, row in result["alone"].items():
            line = (f"{name:>6}: bare {row['bare_ms']:.1f} ms, pcmem {row['pcmem_ms']:.1f} ms ({row['ratio']:.2f}x), "
                    f"load {row['load']:.1f}")
            if "with_busy" in result:
                busy_row = result["with_busy"][name]
                line += (f"; beside {result['busy_processes']} busy: pcmem {busy_row['pcmem_ms']:.1f} ms "
                         f"({result['slowdown_with_busy'][name]:.2f}x), load {busy_row['load']:.1f}")
            store = result["store"][name]
            line += f"; remember {store['remember_ms']:.1f} ms, vector search {store['vector_search_ms']:.1f} ms"
            click.echo(line)
