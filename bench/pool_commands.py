"""``pcmem bench locomo-pool``: the embedding reranker over larger coarse pools, next to the fusions (issue #31)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pcmem.cli import render
from pcmem.cli.progress import progress_bar
from pcmem.errors import InputError


def register(bench: click.Group) -> None:
    @bench.command("locomo-pool")
    @click.option("--data", "data_path", required=True, type=click.Path(exists=True, dir_okay=False),
                  help="Path to locomo10.json (CC BY-NC 4.0; bring your own copy).")
    @click.option("--embedder", default="minilm-l6-int8", show_default=True, metavar="PRESET")
    @click.option("--store", type=click.Path(dir_okay=False), required=True,
                  help="DuckDB store file to ingest into (once) and search; the reranker reads its vectors.")
    @click.option("--pooled", "pooled_path", type=click.Path(dir_okay=False), required=True,
                  help="Each question's channel lists, pools and cosines, as JSON lines: written after fetching; "
                       "when the file exists it is reused and nothing is searched.")
    @click.option("--pools", default="30,50,100", show_default=True, help="Coarse pool sizes (30 must be one).")
    @click.option("--query-prompt", default=None, metavar="TEMPLATE",
                  help="embeddinggemma-300m only: the query prompt, e.g. 'task: question answering | query: {text}' "
                       "(default: the preset's 'task: search result | query: {text}').")
    @click.option("--categories", default="1,2,3,4", show_default=True)
    @click.option("--conversations", default=None, metavar="0,5,...",
                  help="Only these conversations (0-based positions; default all): a subset, labelled as such.")
    @click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the full results as JSON here.")
    @render.json_option
    def locomo_pool(data_path: str, embedder: str, store: str, pooled_path: str, pools: str, query_prompt: str | None,
                    categories: str, conversations: str | None, out: str | None, as_json: bool) -> None:
        """Tune the fusions and the embedding reranker's pool size on LoCoMo conversations 0-4, report on 5-9, and
        the other way round.

        \b
        Examples:
          pcmem bench locomo-pool --data locomo10.json --embedder embeddinggemma-300m --store locomo.gemma.duckdb \\
              --pooled gemma.pooled.jsonl
        """
        from pcmem.compose.runtime import SyncRuntime
        from pcmem.embedding import gemma_preset as gemma
        from pcmem.embedding.presets import preset_embedder
        from pcmem_bench import fusion_pool, fusion_tune
        from pcmem_bench import locomo as bench_locomo
        from pcmem_bench.locomo_data import load

        sizes = sorted({int(size) for size in pools.split(",") if size.strip()})
        if 30 not in sizes:
            raise InputError("--pools must include 30: a 30-hit search's pool is never smaller than 30")
        if Path(pooled_path).exists():
            pooled = fusion_pool.load(pooled_path)
        else:
            chosen_embedder = preset_embedder(embedder)
            if query_prompt is not None:
                if not isinstance(chosen_embedder, gemma.GemmaEmbedder) or "{text}" not in query_prompt:
                    raise InputError("--query-prompt needs --embedder embeddinggemma-300m and a {text} placeholder")
                chosen_embedder = chosen_embedder.with_query_prompt(query_prompt)
            convs = load(data_path)
            chosen = bench_locomo.select_questions(convs, [int(c) for c in categories.split(",") if c.strip()], None)
            if conversations is not None:
                wanted = {convs[int(i)].sample_id for i in conversations.split(",") if i.strip()}
                chosen = [q for q in chosen if q.conversation in wanted]
            with SyncRuntime.open(store, embedder=chosen_embedder) as runtime, \
                    progress_bar("fetching channels and pools", enabled=not as_json) as advance:
                pooled = fusion_pool.fetch(runtime, convs, chosen, sizes, advance)
            fusion_pool.save(pooled, pooled_path)
        result = fusion_pool.evaluate(pooled)
        result.update(embedder=embedder, query_prompt=query_prompt, data=str(data_path))
        if out:
            Path(out).write_text(json.dumps(result, indent=2))
        if as_json:
            render.emit_json({k: v for k, v in result.items() if k != "grid_by_half"})
            return
        click.echo(fusion_tune.markdown(result))
        click.echo(f"\n{result['questions']} questions; channel fetch per search p50 {result['fetch_ms_p50']:.1f} ms, "
                   f"p95 {result['fetch_ms_p95']:.1f} ms")
