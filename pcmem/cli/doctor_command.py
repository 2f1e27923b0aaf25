"""``pcmem doctor``: check the installation, the store, its owner and the models at once, and say what to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from pcmem.cli import doctor_models, doctor_offline, doctor_owner, doctor_packages, doctor_store, render
from pcmem.cli.doctor_findings import Finding


def run_checks(target: Path | str, *, deep: bool) -> list[Finding]:
    """Every check, in the order they print. Nothing is created (but the private runtime folder every pcmem process
    makes), migrated or loaded; ``deep`` adds the full ``pcmem check`` and hashes every prepared model."""
    telemetry = doctor_offline.telemetry_state()  # first: before anything this command imports could load onnxruntime
    facts, which = doctor_store.locate(target)
    path = facts.path
    probe = doctor_owner.start_scrubbed_probe(path) if path is not None and path.exists() else None
    try:
        findings = [doctor_packages.versions(), doctor_packages.dependencies(), doctor_packages.duckdb_fts(), which]
        if path is not None:
            findings += _store_and_owner(path, facts, probe, deep=deep)
    finally:
        if probe is not None and probe.poll() is None:  # not asked (the file went away meanwhile)
            probe.kill()
            probe.communicate()
    findings.append(doctor_models.default_embedder())
    findings += [found for found in (doctor_models.store_embedder(facts.profile, deep=deep),) if found is not None]
    findings += [doctor_models.other_embedders(deep=deep), doctor_models.generation_models(deep=deep)]
    findings += doctor_packages.extras()
    findings.append(doctor_offline.telemetry_finding(telemetry))
    findings += [found for found in (doctor_offline.telemetry_traces(),) if found is not None]
    findings += doctor_offline.folder_findings()
    return findings


def _store_and_owner(path: Path, facts: doctor_store.StoreFacts, probe: subprocess.Popen[str] | None, *,
                     deep: bool) -> list[Finding]:
    assert facts.engine is not None and facts.location is not None
    findings = doctor_store.file_findings(path, facts)
    if not facts.exists:
        return findings
    facts.holder = facts.engine.holder(facts.location)
    here = doctor_owner.reach_owner(path)
    log = doctor_store.log_finding(facts)
    if log is not None:
        findings.append(log)
    if log is None or log.status != "fail":
        findings.append(doctor_store.health_finding(facts, here.pid))
    if deep:
        findings.append(doctor_store.deep_check_finding(facts))
    findings += doctor_owner.owner_findings(path, facts.holder, here, doctor_owner.finish_probe(probe))
    return findings


@click.command()
@click.option("--deep", is_flag=True, help="Also run the full `pcmem check` and hash every prepared model (slower).")
@click.option("--owner-probe", is_flag=True, hidden=True,
              help="Print, as JSON, whether this process reaches the store's owner (doctor runs it with an empty "
                   "environment).")
@render.json_option
def doctor(deep: bool, owner_probe: bool, as_json: bool) -> None:
    """Check the installation, the store, who holds it and the models, and say for each what to do.

    One line per check: ✓ fine, · a fact (nothing to do unless you want what it names), ! works but worth fixing,
    ✗ a problem. Checks: versions and pcmem's pinned dependencies, DuckDB with its full-text extension; the store
    (file, mode, folder writable, a leftover log, its health in one line); who holds it, and whether a pcmem started
    with an empty environment (as MCP hosts start `pcmem mcp`) reaches that owner too; the default embedder's files
    against their pinned sha256, the store's embedder, the other presets, the llama.cpp models; which extras are
    installed and what each is for; onnxruntime's telemetry; the modes of pcmem's folders.

    Fast by default: no model is loaded and only the default embedder (~23 MB) is hashed; --deep adds the full
    `pcmem check` and hashes every prepared model. Exit status 0 when no check failed (warnings allowed), 1 when one
    did. --json prints {"schema": 1, "ok", "counts", "checks": [{"id", "status", "summary", "fix", "data"}]}.

    \b
    Examples:
      pcmem doctor
      pcmem --db team.duckdb doctor --deep
      pcmem doctor --json | jq '.checks[] | select(.status == "fail")'
    """
    store = click.get_current_context().obj
    if owner_probe:
        from pcmem.cli.doctor_owner import probe_output

        click.echo(probe_output(Path(store.path)))
        return
    from pcmem import __version__
    from pcmem.cli.doctor_findings import document, exit_status, line

    findings = run_checks(store.path, deep=deep)
    if as_json:
        render.emit_json(document(findings, __version__))
    else:
        for finding in findings:
            click.echo(line(finding))
    sys.exit(exit_status(findings))


def register(group: click.Group) -> None:
    group.add_command(doctor)
