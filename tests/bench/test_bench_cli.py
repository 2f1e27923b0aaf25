"""``pcmem bench`` lives outside the runtime package (``bench/``, installed as pcmem_bench): pcmem loads it only when a
bench command is looked up, and an installation without it says so in one line instead of a traceback."""

from __future__ import annotations

import subprocess
import sys

from pcmem.errors import ConfigurationError

# Runs the CLI as an installation without pcmem_bench would: the import system finds no such module (a finder put
# first answers exactly what Python answers for a missing top-level package).
WITHOUT_BENCH = """
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name == "pcmem_bench":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Absent())
from pcmem.cli import main
main(prog_name="pcmem")
"""


def _cli_without_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_BENCH, *args], capture_output=True, text=True, timeout=120)


def test_bench_without_its_package_is_one_typed_line(tmp_path):
    for args in (["bench"], ["bench", "locomo", "--data", "x.json"], ["bench", "--help"]):
        done = _cli_without_bench("--db", str(tmp_path / "m.duckdb"), *args)
        assert done.returncode == ConfigurationError.exit_code, (args, done.stderr)
        assert done.stdout == ""
        assert done.stderr.splitlines() == ["pcmem: error: pcmem bench needs the benchmarks, a distribution of their "
                                            "own (pcmem-bench): from a checkout of pcmem, pip install ./bench"], args


def test_the_rest_of_the_cli_works_without_the_bench_package(tmp_path):
    help_text = _cli_without_bench("--help")
    assert help_text.returncode == 0, help_text.stderr
    assert "bench" in help_text.stdout and "Traceback" not in help_text.stderr
    done = _cli_without_bench("--db", str(tmp_path / "m.duckdb"), "remember", "-s", "s", "x")
    assert done.returncode == 0, done.stderr


def test_the_bench_commands_load_only_with_a_bench_command():
    """`pcmem search` and the others never import the benchmarks (the import-linter contract checks the static
    imports; this checks what loads)."""
    probe = ("import sys\nfrom click.testing import CliRunner\nfrom pcmem.cli import main\n"
             "CliRunner().invoke(main, ['where'])\nprint('pcmem_bench' in sys.modules)\n"
             "CliRunner().invoke(main, ['bench', '--help'])\nprint('pcmem_bench' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["False", "True"]
