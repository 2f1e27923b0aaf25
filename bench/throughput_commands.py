"""``pcmem bench writes`` and ``pcmem bench clients``: what a write costs per entry by how it arrives, and what
several processes searching one store get together — each against references measured in the same run."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from pcmem.cli import render


def register(bench: click.Group) -> None:
    @bench.command("writes")
    @click.option("--size", type=int, default=1000, show_default=True, help="Entries in the store before the writes.")
    @click.option("--rounds", type=int, default=6, show_default=True)
    @click.option("--per-round", type=int, default=20, show_default=True, help="Single writes per side and round.")
    @click.option("--threads", type=int, default=4, show_default=True, help="Threads remembering together.")
    @click.option("--batch", type=int, default=500, show_default=True, help="Entries per import.")
    @render.json_option
    def writes(size: int, rounds: int, per_round: int, threads: int, batch: int, as_json: bool) -> None:
        """Per entry: a remember, a keyed remember (a client's write), remembers from several threads (group
        commit), an import — vs a durable SQLite FTS5 insert and DuckDB's own durable one-row write, same run.

        \b
        Example:
          pcmem bench writes --size 1000 --rounds 8
        """
        from pcmem_bench.write_modes import measure

        with tempfile.TemporaryDirectory(prefix="pcmem-write-modes-") as tmp:
            result = measure(Path(tmp), size=size, rounds=rounds, per_round=per_round, threads=threads, batch=batch)
        if as_json:
            render.emit_json(result)
            return
        rows = [(name, f"{result[f'{key}_ms']:.3f}", f"{result[f'{key}_cpu_ms']:.3f}",
                 f"{result[f'{key}_vs_fts5_insert']:.1f}×" if f"{key}_vs_fts5_insert" in result else "",
                 f"{result[f'{key}_vs_duckdb_floor']:.1f}×" if f"{key}_vs_duckdb_floor" in result else "")
                for name, key in (("remember", "remember"), ("remember with a key (a client's write)", "keyed_remember"),
                                  (f"{threads} threads remembering (group commit)", "group"),
                                  (f"import ({batch} entries a transaction)", "import"),
                                  ("SQLite FTS5 durable insert", "fts5_insert"),
                                  (f"SQLite FTS5, {batch} rows a transaction", "fts5_batch"),
                                  ("DuckDB durable one-row write", "duckdb_floor"))]
        render.table(f"a write per entry, {size}-entry store (load {result['load_average']})",
                     ("write", "ms", "CPU ms", "÷ FTS5 insert", "÷ DuckDB floor"), rows)
        render.console.print(f"import ÷ FTS5 batch {result['import_vs_fts5_batch']}×; a key costs "
                             f"{result['keyed_vs_plain']}× (CPU {result['keyed_cpu_vs_plain']}×); "
                             f"groups: {json.dumps(result['write_groups'])}")

    @bench.command("clients")
    @click.option("--entries", type=int, default=1000, show_default=True, help="Entries in the one scope searched.")
    @click.option("--seconds", type=float, default=5.0, show_default=True, help="Length of each phase.")
    @click.option("--embedder", default="minilm-l6-int8", show_default=True, metavar="PRESET|none",
                  help="The store's embedder (hybrid searches); none: full text only.")
    @click.option("--clients", "kinds", default="library,mcp,mcp,cli", show_default=True,
                  help="The clients the phases add, in order: library, mcp, cli.")
    @click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the results as JSON here.")
    @render.json_option
    def clients(entries: int, seconds: float, embedder: str, kinds: str, out: str | None, as_json: bool) -> None:
        """Several processes searching one store: an owner app alone, then with a library client (the TUI), two
        MCP hosts and a CLI loop added one by one — searches/s and p95 per process, each client's p95 against the
        owner's own in the same phase.

        \b
        Example:
          pcmem bench clients --seconds 5
        """
        from pcmem_bench.clients import run

        chosen = tuple(kind.strip() for kind in kinds.split(",") if kind.strip())
        result = run(entries=entries, seconds=seconds, embedder=embedder, clients=chosen)
        if out:
            Path(out).write_text(json.dumps(result, indent=2))
        if as_json:
            render.emit_json(result)
            return
        for number, phase in enumerate(result["phases"]):
            render.table(f"phase {number}: {phase['total_per_s']} searches/s in all, {phase['cores_busy']} cores busy "
                         f"(the owner {phase['owner_cores_busy']}), load {phase['load_average']}",
                         ("process", "searches/s", "p50 ms", "p95 ms", "p95 ÷ owner's", "CPU ms a search"),
                         [(row["process"], row["per_s"], row["p50_ms"], row["p95_ms"], row.get("p95_vs_owner", ""),
                           row.get("cpu_ms_per_search_served", row["cpu_ms_per_search"])) for row in phase["processes"]])
        render.console.print(f"one process alone: {result['alone_per_s']} searches/s; the most together: "
                             f"{result['best_total_per_s']}/s (the owner's CPU column: per search it served)")
