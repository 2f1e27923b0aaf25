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

    @bench.command("embed-batching")
    @click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False), default=None,
                  help="locomo10.json: embed its dialog turns as pcmem stores them (default: generated notes).")
    @click.option("--texts", type=int, default=96, show_default=True, help="Texts to embed (spread over the data).")
    @click.option("--batch", type=int, default=8, show_default=True, help="Texts per llama.cpp call, batched.")
    @click.option("--rounds", type=int, default=4, show_default=True, help="Interleaved rounds (median).")
    @click.option("--threads", type=int, default=None, help="llama.cpp threads (default: the preset's choice).")
    @click.option("--out", type=click.Path(dir_okay=False), default=None, help="Also write the result as JSON.")
    @render.json_option
    def embed_batching(data_path: str | None, texts: int, batch: int, rounds: int, threads: int | None,
                       out: str | None, as_json: bool) -> None:
        """EmbeddingGemma: one text per llama.cpp call (what pcmem does) vs several, same texts, same run — speed,
        what batching does to the vectors, and the per-token floor (needs the embeddinggemma-300m preset).

        \b
        Example:
          pcmem bench embed-batching --data locomo10.json --texts 96 --batch 8
        """
        from pcmem_bench import embed_batching as bench_batching

        if data_path:
            from pcmem_bench.locomo_data import load

            turns = [turn.entry_text() for conversation in load(data_path) for turn in conversation.turns
                     if turn.text or turn.caption]
        else:
            from pcmem_bench.perf import sentences

            turns = sentences(max(texts, 1))
        step = max(1, len(turns) // max(texts, 1))
        result = bench_batching.run(turns[::step][:texts], batch=batch, rounds=rounds, threads=threads)
        if out:
            Path(out).write_text(json.dumps(result, indent=2))
        if as_json:
            render.emit_json(result)
            return
        click.echo(f"{result['texts']} texts (~{result['tokens_per_text']} tokens), {result['threads']} threads, "
                   f"load {result['load_average']}")
        click.echo(f"one per call: {result['one_per_call_ms_per_text']} ms a text (CPU "
                   f"{result['one_per_call_cpu_ms_per_text']}); {batch} per call: {result['batched_ms_per_text']} ms "
                   f"(CPU {result['batched_cpu_ms_per_text']}): {result['speedup']}x (CPU {result['cpu_speedup']}x)")
        click.echo(f"batched vs one per call: cosine min {result['cosine_batched_vs_one_min']}, median "
                   f"{result['cosine_batched_vs_one_median']}; reference agreement one per call "
                   f"{result['reference_agreement_one_per_call']}, batched {result['reference_agreement_batched']} "
                   f"(accepted from {result['reference_bar']})")
        click.echo("one thread, one call: " + ", ".join(f"{row['tokens']} tokens {row['cpu_ms']} ms"
                                                         for row in result["per_token_floor_one_thread"]))
