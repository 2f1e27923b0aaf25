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
