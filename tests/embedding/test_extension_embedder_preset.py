"""Adding an embedder preset is one declaration (an EmbedderPreset: a family class with its files, readiness and
embedder, an instance with its name, profile, batch size and fusion parameters): a preset declared here, in the test,
is listed by ``pcmem models``, prepared by ``pcmem models prepare`` through its build reference, refused until then,
embeds a real store, is found again from the store's profile, fuses with its own parameters and is checked by
``pcmem doctor``. A plugin distribution declares one the same way, through the ``pcmem.embedders`` entry point group
(a real distribution on a path, in a subprocess). CONTRIBUTING.md shows the same steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

import pcmem
from pcmem.cli import main
from pcmem.embedding import presets
from pcmem.embedding.preset_declaration import EmbedderPreset, PrepareOptions
from pcmem.errors import ConfigurationError
from pcmem.testing import HashEmbedder
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.fusion import FusionDefaults, WeightedRrf
from pcmem.types.progress import StageProgress

MARK = "pcmem-model.json"


@dataclass(frozen=True, kw_only=True)
class HashPreset(EmbedderPreset):
    """A model family whose "model" is a marker file its build writes; it embeds with hashed words."""

    build: str | None = f"{__name__}:prepare_hash"

    def model_dir(self, cache_root: Path) -> Path:
        return cache_root / "models" / self.name

    def is_ready(self, cache_root: Path) -> bool:
        return (self.model_dir(cache_root) / MARK).is_file()

    def embedder(self, cache_root: Path) -> HashEmbedder:
        if not self.is_ready(cache_root):
            raise ConfigurationError(f"{self.name} is not prepared: run `{self.prepare_hint}`")
        return HashEmbedder(model_id=self.profile.model_id, dimension=self.profile.dimension)


def prepare_hash(preset: HashPreset, root: Path, progress: StageProgress | None, options: PrepareOptions) -> Path:
    """The build ``pcmem models prepare`` imports by reference."""
    options.notify(f"building {preset.name}")
    folder = preset.model_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARK).write_text(json.dumps({"accept_terms": options.accept_terms}))
    return folder


DECLARED = HashPreset(name="test-hash", profile=EmbeddingProfile("test/hash-preset@v1", 48, True),
                      description="hashed words, 48-d: a test's preset", prepare_hint="pcmem models prepare test-hash",
                      batch_size=8, fusion=FusionDefaults(convex_alpha=0.9, weighted_rrf=WeightedRrf(k=3, vector_weight=0.6)))


@pytest.fixture
def hash_preset(tmp_path, monkeypatch) -> Iterator[HashPreset]:
    monkeypatch.setenv("PCMEM_CACHE_DIR", str(tmp_path / "cache"))
    presets.register(DECLARED)
    try:
        yield DECLARED
    finally:
        presets.unregister(DECLARED.name)


def _models() -> dict[str, dict]:
    done = CliRunner().invoke(main, ["models", "--json"])
    assert done.exit_code == 0, done.output
    return {row["name"]: row for row in json.loads(done.output)}


def test_a_declared_preset_is_listed_prepared_and_embeds_a_store(hash_preset, tmp_path):
    listed = _models()["test-hash"]
    assert (listed["ready"], listed["prepare"], listed["dimension"]) == (False, "pcmem models prepare test-hash", 48)
    store = tmp_path / "hash.duckdb"
    with pytest.raises(ConfigurationError, match="not prepared yet: run `pcmem models prepare test-hash`"):
        pcmem.open(store, embedder="test-hash")

    done = CliRunner().invoke(main, ["models", "prepare", "test-hash", "--accept-gemma-terms", "--json"])
    assert done.exit_code == 0, done.output
    assert "building test-hash" in done.stderr
    prepared = json.loads(done.stdout)
    assert prepared["profile"] == "test/hash-preset@v1" and Path(prepared["path"]).is_dir()
    assert _models()["test-hash"]["ready"]

    with pcmem.open(store, embedder="test-hash") as runtime:
        scoped = runtime.memory.for_scope("s")
        scoped.remember("Deploys go out on Fridays after the review.")
        page = scoped.search(pcmem.SearchMemoryRequest(query="deploys go out on Fridays", mode="hybrid", fusion="convex"))
        assert "vector" in page.hits[0].matched_by
        assert page.fusion_parameters["alpha"] == 0.9  # the preset's own, not the shared 0.45
        weighted = scoped.search(pcmem.SearchMemoryRequest(query="deploys go out on Fridays", fusion="weighted-rrf"))
        assert weighted.fusion_parameters == {"k": 3, "vector_weight": 0.6}
    with pcmem.open(store) as runtime:  # "auto": the store's profile finds its preset again
        assert runtime.embedder is not None and runtime.embedder.profile == hash_preset.profile


def test_the_doctor_checks_a_declared_preset(hash_preset, tmp_path):
    store = tmp_path / "doctor.duckdb"
    prepare_hash(hash_preset, Path(os.environ["PCMEM_CACHE_DIR"]), None, PrepareOptions())
    with pcmem.open(store, embedder="test-hash") as runtime:
        runtime.memory.for_scope("s").remember("one entry")
    done = CliRunner().invoke(main, ["--db", str(store), "doctor", "--json"])
    checks = {check["id"]: check for check in json.loads(done.stdout)["checks"]}
    assert (checks["models.store"]["status"], checks["models.store"]["data"]["preset"]) == ("ok", "test-hash")
    assert "test-hash" in checks["models.embedders"]["data"]["prepared"]


def test_a_preset_name_or_profile_is_declared_once(hash_preset):
    with pytest.raises(pcmem.InputError, match="already declared"):
        presets.register(DECLARED)
    twin = HashPreset(name="twin", profile=DECLARED.profile, description="", prepare_hint="", batch_size=1)
    with pytest.raises(pcmem.InputError, match="has the profile of another"):
        presets.register(twin)


PLUGIN = '''
from dataclasses import dataclass
from pathlib import Path

from pcmem.embedding.preset_declaration import EmbedderPreset
from pcmem.testing import HashEmbedder
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.fusion import FusionDefaults


@dataclass(frozen=True, kw_only=True)
class Hashed(EmbedderPreset):
    def model_dir(self, cache_root: Path) -> Path:
        return cache_root / "models" / self.name

    def is_ready(self, cache_root: Path) -> bool:
        return True

    def embedder(self, cache_root: Path) -> HashEmbedder:
        return HashEmbedder(model_id=self.profile.model_id, dimension=self.profile.dimension)


PRESET = Hashed(name="plugin-hash", profile=EmbeddingProfile("plugin/hash@1", 32, True), description="a plugin's",
                prepare_hint="ready", batch_size=4, fusion=FusionDefaults(convex_alpha=0.8))
'''
PROBE = '''
import json, sys
from click.testing import CliRunner
import pcmem
from pcmem.cli import main
from pcmem.embedding import preset_plugins

store = sys.argv[1]
with pcmem.open(store + ".minilm.duckdb", embedder="minilm-l6-int8") as runtime:  # a shipped preset: no plugin read
    runtime.memory.for_scope("s").search(pcmem.SearchMemoryRequest(query="x", fusion="convex"))
read_for_shipped = preset_plugins._loaded
models = CliRunner().invoke(main, ["models", "--json"])
listed = [row["name"] for row in json.loads(models.stdout) if row["kind"] == "embedder"]
prepared = CliRunner().invoke(main, ["models", "prepare", "plugin-hash", "--json"])  # no build: checked ready
assert prepared.exit_code == 0 and json.loads(prepared.stdout)["verified"], prepared.output
with pcmem.open(store, embedder="plugin-hash") as runtime:
    runtime.memory.for_scope("s").remember("Deploys go out on Fridays.")
    page = runtime.memory.for_scope("s").search(pcmem.SearchMemoryRequest(query="deploys", fusion="convex"))
print(json.dumps({"read_for_shipped": read_for_shipped, "listed": listed, "alpha": page.fusion_parameters["alpha"],
                  "stderr": models.stderr}))
'''


def _distribution(site: Path, name: str, entry_points: str, module: str | None = None) -> None:
    """A real (if tiny) installed distribution: its module and a dist-info that importlib.metadata reads."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    if module is not None:
        (site / f"{name}.py").write_text(module)


def test_a_plugin_distribution_declares_a_preset_by_entry_point(tmp_path):
    site = tmp_path / "site"
    _distribution(site, "pcmem_hash_plugin", "[pcmem.embedders]\nhash = pcmem_hash_plugin:PRESET\n", PLUGIN)
    _distribution(site, "pcmem_broken_plugin", "[pcmem.embedders]\nbroken = pcmem_broken_plugin:MISSING\n", "")
    env = {**os.environ, "PYTHONPATH": str(site), "PCMEM_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "plugin.duckdb")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["read_for_shipped"] is False  # opening and searching a shipped preset's store reads no plugin
    assert report["listed"][-1] == "plugin-hash" and report["alpha"] == 0.8
    skipped = ("pcmem: the embedder plugin broken (pcmem_broken_plugin:MISSING) was skipped: module "
               "'pcmem_broken_plugin' has no attribute 'MISSING'")
    assert report["stderr"].startswith(skipped) and report["stderr"].count("\n") == 1  # one line, no traceback
