"""``pcmem bench``: the command group. ``pcmem.cli`` loads it when a ``bench`` command is looked up (the one hook,
:mod:`pcmem.cli.bench_command`); the commands live one module per kind of benchmark."""

from __future__ import annotations

import click

from pcmem.cli import render
from pcmem_bench import (
    app_commands,
    embed_speed_commands,
    latency_commands,
    locomo_commands,
    pool_commands,
    safety_commands,
    throughput_commands,
)


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


for _command in (locomo_commands.locomo, locomo_commands.locomo_report, locomo_commands.locomo_fusion,
                 latency_commands.rerank_, latency_commands.perf, latency_commands.serve_, latency_commands.startup,
                 safety_commands.crash, safety_commands.chaos, safety_commands.owner_, app_commands.stall):
    bench.add_command(_command)

pool_commands.register(bench)
embed_speed_commands.register(bench)
throughput_commands.register(bench)
