"""The model builds (mpnet's ONNX export and quantisation, EmbeddingGemma's GGUF conversion) live in
pcmem.embedding.build, apart from the run-time presets: using every preset at run time loads none of them (the
import-linter contract checks the static imports; this checks what actually loads)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from click.testing import CliRunner
import pcmem
from pcmem.cli import main
from pcmem.embedding import presets

for name in (*presets.EMBEDDER_PRESETS, *presets.RETIRED_PRESETS):
    presets.preset_embedder(name, sys.argv[1])
    presets.preset_state(presets.preset_named(name), sys.argv[1])
assert CliRunner().invoke(main, ["models", "--json"]).exit_code == 0
with pcmem.open(sys.argv[1] + "/m.duckdb", embedder=None) as runtime:
    runtime.memory.for_scope("s").remember("The team deploys on Fridays.")
    runtime.memory.for_scope("s").search("deploys")
print(" ".join(sorted(m for m in sys.modules if m.startswith("pcmem.embedding."))))
"""


def test_using_every_preset_at_run_time_loads_no_model_build(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert {"pcmem.embedding.mpnet_preset", "pcmem.embedding.gemma_preset", "pcmem.embedding.presets"} <= set(loaded)
    assert [module for module in loaded if module.startswith("pcmem.embedding.build")] == []
