"""The command line tests' seeded stores: built once per session through the CLI, copied into each test's folder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_runner import (
    SCOPE,
    jsonl,
    remember,
    run_json,
    store_path,
    write_jsonl,
)

# Creating a store costs ~0.1 s (migrations, the FTS extension loaded to build the index), so stores that many tests
# start from are built once per session through the CLI and copied into each test's tmp_path.



def _build_two(directory: Path) -> None:
    """Scope "p": e1 "First." (revision 1) and e2 "Second." (revision 2)."""
    remember(directory, SCOPE, "First.", "--id", "e1")
    remember(directory, SCOPE, "Second.", "--id", "e2", "--kind", "event")


def _build_lifecycle(directory: Path) -> None:
    """Scope "p": import (r1) → revise (r2) → retire (r3) → reactivate (r4) of alice-tea; bob-coffee only in r1."""
    source = write_jsonl(directory / "seed.jsonl", [
        jsonl({"entry_id": "alice-tea", "text": "Alice likes tea.", "kind": "preference", "metadata": {"v": 1}}),
        jsonl({"entry_id": "bob-coffee", "text": "Bob likes coffee."}),
    ])
    results = [
        run_json(directory, "import", "--scope", SCOPE, str(source)),
        run_json(directory, "revise", "--scope", SCOPE, "--expected-revision", "1", "--metadata", '{"v": 2}',
                 "alice-tea", "Alice likes green tea."),
        run_json(directory, "retire", "--scope", SCOPE, "alice-tea"),
        run_json(directory, "reactivate", "--scope", SCOPE, "--expected-revision", "3", "alice-tea"),
    ]
    (directory / "results.json").write_text(json.dumps(results), encoding="utf-8")


def _build_demo(directory: Path) -> None:
    (directory / "results.json").write_text(json.dumps(run_json(directory, "demo")), encoding="utf-8")


_TEMPLATES: dict[str, Callable[[Path], None]] = {
    "two": _build_two, "lifecycle": _build_lifecycle, "demo": _build_demo,
}


@pytest.fixture(scope="session")
def _template_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-templates")


@pytest.fixture
def seed(_template_root: Path, tmp_path: Path) -> Callable[[str], Path]:
    """``seed(name)`` puts a copy of the named template store at this test's store path; returns the template dir."""

    def copy(name: str) -> Path:
        directory = _template_root / name
        if not store_path(directory).exists():
            directory.mkdir(exist_ok=True)
            _TEMPLATES[name](directory)
        shutil.copyfile(store_path(directory), store_path(tmp_path))
        return directory

    return copy


@pytest.fixture
def two(seed: Callable[[str], Path]) -> None:
    seed("two")


@pytest.fixture
def lifecycle(seed: Callable[[str], Path]) -> list[dict[str, Any]]:
    """The lifecycle store; returns the --json results of its four writes."""
    return json.loads((seed("lifecycle") / "results.json").read_text(encoding="utf-8"))


@pytest.fixture
def demo(seed: Callable[[str], Path]) -> dict[str, Any]:
    """A store seeded by ``pcmem demo --json`` (run in the template directory); returns that run's output."""
    return json.loads((seed("demo") / "results.json").read_text(encoding="utf-8"))
