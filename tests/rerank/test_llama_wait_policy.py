"""llama.cpp's OpenMP threads wait passively (issue #30): spinning threads made one EmbeddingGemma passage ~13x slower
on a loaded 2-core machine. libgomp reads OMP_WAIT_POLICY once, when llama.cpp's library loads, so the variable must
be set before the first ``import llama_cpp``: each test imports a stand-in ``llama_cpp`` in a fresh interpreter that
records what it saw at import time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

STAND_IN = "import os\nseen_at_import = os.environ.get('OMP_WAIT_POLICY')\n"


def _import_through(tmp_path: Path, call: str, env_policy: str | None) -> str:
    (tmp_path / "llama_cpp.py").write_text(STAND_IN)
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_policy is not None:
        env["OMP_WAIT_POLICY"] = env_policy
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    program = f"{call}\nimport llama_cpp\nprint(llama_cpp.seen_at_import)"
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("call", [
    "from pcmem.inference.llama_cpp import require_llama_cpp; require_llama_cpp()",
    # the EmbeddingGemma preset loads its model through the same import
    "from pathlib import Path; from pcmem.embedding.gemma_preset import GemmaEmbedder\n"
    "try:\n    GemmaEmbedder(lambda: Path('/nonexistent.gguf'))._model()\nexcept Exception:\n    pass",
])
def test_llama_cpp_loads_with_passive_waiting(tmp_path: Path, call: str) -> None:
    assert _import_through(tmp_path, call, None) == "PASSIVE"


def test_a_wait_policy_the_user_set_wins(tmp_path: Path) -> None:
    call = "from pcmem.inference.llama_cpp import require_llama_cpp; require_llama_cpp()"
    assert _import_through(tmp_path, call, "ACTIVE") == "ACTIVE"
