"""``pcmem bench crash``, ``chaos`` and ``owner``: SIGKILLs, threads, processes and hostile input, each verified
against what was acknowledged."""

from __future__ import annotations

from pathlib import Path

import click

from pcmem.cli import render


@click.command()
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

    from pcmem_bench import crash as bench_crash

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


@click.command()
@click.option("--quick", is_flag=True, help="A small run (CI, development): a few hundred hostile cases, 1 kill round.")
@click.option("--hostile-cases", type=int, default=None, help="Hypothesis cases (default 10,000; --quick: 300).")
@click.option("--kill-rounds", type=int, default=None,
              help="Rounds of 4 SIGKILL trials (revise stream, import, reindex --embedder, damaged WAL); default 5.")
@click.option("--retry-rounds", type=int, default=None,
              help="Rounds of the proxy-drop trial (every retried write, its answer lost after the COMMIT); default 3.")
@render.json_option
def chaos(quick: bool, hostile_cases: int | None, kill_rounds: int | None, retry_rounds: int | None,
          as_json: bool) -> None:
    """The safety campaign (issue 16): threads, runtimes, async tasks, processes, SIGKILLs, lost answers and hostile
    input.

    Each scenario prints operations, acknowledged writes, acknowledged writes found afterwards (must be equal),
    typed errors by class, untyped errors (must be 0) and `check` (must pass); the proxy-drop trial also writes
    applied twice and wrong outcomes (both must be 0). Then the throughput of 4 threads vs 1 on one runtime. Exits 1
    when a scenario fails.

    \b
    Examples:
      pcmem bench chaos --quick
      pcmem bench chaos --json > chaos.json
    """
    import dataclasses
    import tempfile

    from pcmem_bench import chaos as bench_chaos

    plan = bench_chaos.QUICK if quick else bench_chaos.Plan()
    if hostile_cases is not None:
        plan = dataclasses.replace(plan, hostile_cases=hostile_cases)
    if kill_rounds is not None:
        plan = dataclasses.replace(plan, kill_rounds=kill_rounds)
    if retry_rounds is not None:
        plan = dataclasses.replace(plan, retry_rounds=retry_rounds)
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
            if scenario["applied_twice"] or scenario["wrong_outcomes"] or "proxy-drop" in scenario["scenario"]:
                click.echo(f"     applied twice {scenario['applied_twice']}, wrong outcomes "
                           f"{scenario['wrong_outcomes']}")
            for problem in scenario["untyped_errors"][:3] + scenario["checks_failed"][:3] + (
                    scenario["notes"][:3] if scenario["applied_twice"] or scenario["wrong_outcomes"] else []):
                click.echo(f"     ! {problem[:300]}")
        figure = result["scaling"]
        click.echo(f"4 threads vs 1 thread, mixed search/remember on one runtime: {figure['ops_per_second_1']} → "
                   f"{figure['ops_per_second_4']} ops/s = {figure['ratio']}x")
    if not result["ok"]:
        raise SystemExit(1)


@click.command("owner")
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
    from pcmem_bench import owner as bench_owner

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
    found = result["find_and_stop"]
    click.echo(f"finding a running owner (pcmem.open): p50 {found['find_p50_ms']} ms; the owner stopped (SIGSTOP): a "
               f"call ends with OwnerStoppedError after p50 {found['stopped_call_p50_ms']} ms (max "
               f"{found['stopped_call_max_ms']}), an open after p50 {found['stopped_open_p50_ms']} ms (max "
               f"{found['stopped_open_max_ms']})")
    repeated = result["repeated_query"]
    click.echo(f"repeated query: owner p50 {repeated['owner_p50_ms']} ms, client {repeated['client_p50_ms']} ms")
    kill = result["kill"]
    click.echo(f"SIGKILL x{kill['rounds']}: a client owned the file after p50 {kill['takeover_p50_ms']} ms, max "
               f"{kill['takeover_max_ms']} ms (target <= 2000); acknowledged {kill['acknowledged']}, lost "
               f"{kill['lost']}, errors {kill['error_count']}, entries not writable {kill['entries_not_writable']}")
    handoff = result["handoff"]
    if handoff is not None:
        click.echo(f"hand-off, two MCP hosts and a CLI loop, owner SIGKILLed x{handoff['rounds']} (new owner: "
                   f"{', '.join(handoff['new_owner'])}); a restarted host answered after p50 "
                   f"{handoff['restart_p50_ms']} ms:")
        for name, row in handoff["clients"].items():
            click.echo(f"  {name}: next answer p50 {row['next_answer_p50_ms']} ms, p99 {row['next_answer_p99_ms']} ms "
                       f"(target <= 2000; a call takes p50 {row['call_p50_ms']} ms), {row['failed']} of "
                       f"{row['calls']} calls failed")

