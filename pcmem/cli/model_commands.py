"""``pcmem models``: the local generation models pcmem knows, and preparing one."""

from __future__ import annotations

import click

from pcmem.cli import render
from pcmem.cli.progress import progress_bar
from pcmem.errors import InputError
from pcmem.inference import presets
from pcmem.model_files import is_intact


@click.group(invoke_without_command=True)
@render.json_option
@click.pass_context
def models(ctx: click.Context, as_json: bool) -> None:
    """List the model presets (shipped in PyPI wheels) and their state.

    \b
    Examples:
      pcmem models
      pcmem models prepare qwen2.5-coder-1.5b-instruct
    """
    if ctx.invoked_subcommand is not None:
        return
    rows = []
    for preset in presets.PRESETS.values():
        state = presets.state(preset)
        verified = state.assembled and is_intact(state.path, preset.sha256)
        rows.append({"name": preset.name, "installed": state.installed, "assembled": state.assembled,
                     "verified": verified, "path": str(state.path), "install": preset.requirement,
                     "description": preset.description})
    if as_json:
        render.emit_json(rows)
        return
    render.table(None, ("preset", "installed", "assembled", "verified", "description"),
                 [(r["name"], _yes(r["installed"]), _yes(r["assembled"]), _yes(r["verified"]), r["description"])
                  for r in rows])
    render.console.print("\nUse one: --model llama-cpp:<preset>, or llama-cpp:/path/to/model.gguf")


def _yes(value: bool) -> str:
    return "yes" if value else "no"


@models.command()
@click.argument("name")
@render.json_option
def prepare(name: str, as_json: bool) -> None:
    """Assemble the preset NAME from its wheels and verify it by sha256.

    \b
    Example:
      pcmem models prepare smollm2-135m-instruct
    """
    preset = presets.PRESETS.get(name)
    if preset is None:
        raise InputError(f"unknown preset {name!r}; known: {', '.join(presets.PRESETS)}")
    with progress_bar(f"preparing {name}", enabled=not as_json, bytes_=True) as advance:
        path = presets.prepare(preset, advance)
    if as_json:
        render.emit_json({"name": name, "path": str(path), "sha256": preset.sha256, "verified": True})
    else:
        render.console.print(f"{name}: verified {path}")


def register(group: click.Group) -> None:
    group.add_command(models)
