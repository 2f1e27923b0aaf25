"""``pcmem doctor``: the models — the default embedder's files against their pinned sha256, the store's own embedder,
the other embedder presets and the llama.cpp models.

No model is loaded. The default embedder (~23 MB) is hashed every time; the larger prepared models (268 MB to 1.1 GB)
only with ``--deep`` — without it they are judged by the manifest their preparation wrote, and loading one verifies
it anyway.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pcmem.cli.doctor_findings import Finding, fail, info, ok, warn

if TYPE_CHECKING:
    from pcmem.types.embedding import EmbeddingProfile


def default_embedder() -> Finding:
    from pcmem.embedding.presets import DEFAULT_PRESET, preset_named
    from pcmem.settings import cache_dir

    check = "models.default"
    preset, root = preset_named(DEFAULT_PRESET), cache_dir()
    problems = preset.source_problems()
    if problems:
        return fail(check, f"the default embedder ({DEFAULT_PRESET}): {problems[0]}", None, problems=problems)
    damaged = preset.damaged_copies(root)
    folder = preset.model_dir(root)
    if damaged:
        names = ", ".join(path.name for path in damaged)
        if os.access(folder, os.W_OK):
            return warn(check, f"the default embedder's copy in {folder} is damaged ({names}: sha256 mismatch); the "
                               "installed files are intact and pcmem copies them again on first use",
                        f"or remove {folder}", damaged=[str(path) for path in damaged])
        return fail(check, f"the default embedder's copy in {folder} is damaged ({names}) and the folder is not "
                           "writable, so pcmem cannot replace it", f"remove {folder} or make it writable",
                    damaged=[str(path) for path in damaged])
    return ok(check, f"the default embedder ({DEFAULT_PRESET}): model files match their pinned sha256",
              copy=str(folder))


def store_embedder(profile: EmbeddingProfile | None, *, deep: bool) -> Finding | None:
    """The embedder the store's vectors were made with: searches and writes need it here."""
    if profile is None:
        return None
    from pcmem.embedding import presets

    check = "models.store"
    preset = presets.for_model_id(profile.model_id)
    if preset is not None and preset.profile != profile:
        preset = None
    if preset is None:
        return info(check, f"the store's vectors come from {profile.model_id} (not a preset: pcmem finds it as the "
                           "store names it)", None, model=profile.model_id)
    if preset.name == presets.DEFAULT_PRESET:
        return ok(check, f"the store's vectors come from the default embedder ({preset.name})", preset=preset.name)
    if deep:
        ready, where = presets.preset_state(preset)
        if not ready:
            return fail(check, f"the store's embedder {preset.name} is not prepared or damaged here ({where})",
                        preset.prepare_hint, preset=preset.name)
        return ok(check, f"the store's embedder {preset.name} is prepared; its files match their sha256",
                  preset=preset.name)
    if not presets.looks_prepared(preset):
        return fail(check, f"the store's vectors come from {preset.name}, which is not prepared here: searches "
                           "cannot embed queries and writes are refused", preset.prepare_hint, preset=preset.name)
    return ok(check, f"the store's embedder {preset.name} is prepared (hashed when it loads; --deep hashes it now)",
              preset=preset.name)


def other_embedders(*, deep: bool) -> Finding:
    from pcmem.embedding import presets

    prepared, missing, damaged = [], [], []
    for preset in presets.offered():
        if preset.name == presets.DEFAULT_PRESET:
            continue
        if not presets.looks_prepared(preset):
            missing.append(preset.name)
        elif deep and not presets.preset_state(preset)[0]:
            damaged.append(preset.name)
        else:
            prepared.append(preset.name)
    parts = [f"prepared: {', '.join(prepared)}" if prepared else "",
             f"not prepared: {', '.join(missing)}" if missing else "",
             f"damaged: {', '.join(damaged)}" if damaged else ""]
    summary = "other embedders " + "; ".join(part for part in parts if part)
    data = {"prepared": prepared, "not_prepared": missing, "damaged": damaged}
    if damaged:
        return warn("models.embedders", summary, f"pcmem models prepare {damaged[0]}", **data)
    return info("models.embedders", summary, "pcmem models prepare NAME" if missing else None, **data)


def generation_models(*, deep: bool) -> Finding:
    """The llama.cpp models of the presets: installed (their wheels), assembled, verified with --deep."""
    from pcmem.cli.doctor_packages import importable
    from pcmem.inference import presets
    from pcmem.model_files import is_intact

    ready, installed, absent, damaged = [], [], [], []
    for preset in presets.PRESETS.values():
        state = presets.state(preset)
        if state.assembled and deep and not is_intact(state.path, preset.sha256):
            damaged.append(preset.name)
        elif state.assembled:
            ready.append(preset.name)
        elif state.installed:
            installed.append(preset.name)
        else:
            absent.append(preset.name)
    parts = [f"assembled: {', '.join(ready)}" if ready else "",
             f"installed, not assembled yet: {', '.join(installed)}" if installed else "",
             f"not installed: {', '.join(absent)}" if absent else "",
             f"damaged: {', '.join(damaged)}" if damaged else ""]
    summary = "llama.cpp models " + "; ".join(part for part in parts if part)
    data = {"assembled": ready, "installed": installed, "not_installed": absent, "damaged": damaged}
    if damaged:
        return warn("models.llama", summary, f"pcmem models prepare {damaged[0]}", **data)
    if (ready or installed) and not importable("llama-cpp-python"):
        return warn("models.llama", summary + " — but llama-cpp-python is not installed", "pip install 'pcmem[llm]'",
                    **data)
    return info("models.llama", summary, None, **data)
