"""``pcmem doctor`` (#44 item 4): each problem it lists is made for real here, and doctor finds it.

Doctor runs as its own process every time (it looks at ``sys.modules``, the environment and other processes), with
its caches, state and telemetry switch pointed at this test's folders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import pcmem

ROOT = Path(__file__).resolve().parents[2]
HOLD_STORE = """
import sys, pcmem
runtime = pcmem.open(sys.argv[1], embedder=None)
print("ready", flush=True)
sys.stdin.read()
runtime.close()
"""
HOLD_FILE = """
import sys, duckdb
connection = duckdb.connect(sys.argv[1])
print("ready", flush=True)
sys.stdin.read()
"""


def environment(tmp_path: Path, **overrides: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PCMEM_", "POWERCONTEXT_")) and key not in ("XDG_RUNTIME_DIR", "ORT_DISABLE_TELEMETRY")}
    env.update({"ORT_DISABLE_TELEMETRY": "1", "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
                "XDG_STATE_HOME": str(tmp_path / "xdg-state"), "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
                "PCMEM_CACHE_DIR": str(tmp_path / "pcmem-cache")})
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def doctor(tmp_path: Path, store: Path, *args: str, prelude: str = "", wrapper: tuple[str, ...] = (),
           **env: str | None) -> tuple[int, dict[str, Any]]:
    """``pcmem --db STORE doctor --json ARGS`` in a process of its own (``prelude`` runs first, in that process)."""
    code = f"{prelude}\nfrom pcmem.cli import main\nmain({['--db', str(store), 'doctor', '--json', *args]!r})"
    done = subprocess.run([*wrapper, sys.executable, "-c", code], env=environment(tmp_path, **env), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def checks(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["id"]: check for check in document["checks"]}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store" / "memory.duckdb"
    with pcmem.open(path) as runtime:
        runtime.memory.for_scope("project").remember("We deploy on Fridays.")
    return path


@pytest.fixture
def runtime_folder() -> Iterator[Path]:
    """A private runtime folder with a short path (a Unix socket's path has ~104 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Any]:
    """Start a process that holds a store (``held(script, store, **env)``) and waits; stopped after the test."""
    started: list[subprocess.Popen[str]] = []

    def start(script: str, path: Path, **env: str | None) -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, "-c", script, str(path)], env=environment(tmp_path, **env),
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        started.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        return process

    yield start
    for process in started:
        process.communicate(input="", timeout=60)


def test_a_healthy_store_passes_with_one_line_per_check(tmp_path: Path, store: Path) -> None:
    status, document = doctor(tmp_path, store)
    assert status == 0, [c for c in document["checks"] if c["status"] == "fail"]
    assert document["schema"] == 1 and document["ok"] is True
    assert all(set(check) == {"id", "status", "summary", "fix", "data"} for check in document["checks"])
    found = checks(document)
    assert found["store.file"]["status"] == "ok" and found["store.file"]["data"]["mode"] == "0600"
    assert found["store.health"]["status"] == "ok" and found["store.health"]["data"]["entry_versions"] == 1
    assert found["owner"]["status"] == "ok" and found["owner"]["data"]["holder"] is None
    assert found["models.default"]["status"] == "ok"
    assert found["models.store"]["data"]["preset"] == "minilm-l6-int8"
    assert found["offline.telemetry"]["status"] == "ok"
    text = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(store), "doctor"], env=environment(tmp_path),
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    lines = text.stdout.splitlines()
    assert text.returncode == 0 and len(lines) == len(document["checks"])
    assert all(line[:2] in ("✓ ", "· ", "! ") for line in lines), lines


def test_no_store(tmp_path: Path) -> None:
    status, document = doctor(tmp_path, tmp_path / "nowhere" / "memory.duckdb")
    found = checks(document)
    assert found["store.file"]["status"] == "warn" and "no store at" in found["store.file"]["summary"]
    assert "pcmem init" in found["store.file"]["fix"]
    assert found["store.folder"]["status"] == "ok"  # it can be created
    assert "store.health" not in found and "owner" not in found
    assert status == 0  # a warning is not a failure
    assert not (tmp_path / "nowhere").exists()  # doctor creates nothing


def test_a_read_only_folder(tmp_path: Path, store: Path) -> None:
    """The store's folder on a real read-only mount, seen by doctor's process only (a private mount namespace)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    folder = store.parent
    mount = f"mount --bind '{folder}' '{folder}' && mount -o remount,ro,bind '{folder}'"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount read-only here: {probe.stderr.strip()}")
    status, document = doctor(tmp_path, store, wrapper=("unshare", "-m", "sh", "-c", f'{mount} && exec "$0" "$@"'))
    found = checks(document)
    assert found["store.folder"]["status"] == "warn" and "read-only" in found["store.folder"]["summary"]
    assert found["store.folder"]["data"]["writable"] is False
    assert found["store.health"]["status"] == "ok"  # reads still work
    assert status == 0


def test_a_damaged_copy_of_the_default_model(tmp_path: Path, store: Path) -> None:
    """The model folder pcmem made under $PCMEM_CACHE_DIR, then one byte of its model.onnx changed."""
    from pcmem.embedding import minilm

    folder = minilm.prepare_model_dir(minilm.model_dir(tmp_path / "pcmem-cache"))
    model = folder / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))
    _, document = doctor(tmp_path, store)
    found = checks(document)["models.default"]
    assert found["status"] == "warn" and "sha256 mismatch" in found["summary"]
    assert found["data"]["damaged"] == [str(model)]


def test_a_prepared_model_with_a_wrong_hash_is_found_by_deep(tmp_path: Path, store: Path) -> None:
    """A copied EmbeddingGemma folder whose GGUF is not the pinned file: it looks prepared, --deep hashes it."""
    from pcmem.embedding import gemma_preset

    folder = gemma_preset.model_dir(tmp_path / "pcmem-cache")
    folder.mkdir(parents=True)
    (folder / gemma_preset.MANIFEST).write_text(json.dumps({"sha256": gemma_preset.GGUF_SHA256}))
    (folder / gemma_preset.GGUF).write_bytes(b"GGUF" + bytes(4096))
    _, light = doctor(tmp_path, store)
    assert "embeddinggemma-300m" in checks(light)["models.embedders"]["data"]["prepared"]
    _, deep = doctor(tmp_path, store, "--deep")
    found = checks(deep)
    assert found["models.embedders"]["status"] == "warn"
    assert found["models.embedders"]["data"]["damaged"] == ["embeddinggemma-300m"]
    assert found["store.check"]["status"] == "ok"  # and --deep ran the full pcmem check


def test_a_store_missing_a_derived_structure(tmp_path: Path, store: Path) -> None:
    with duckdb.connect(str(store)) as db:
        db.execute("DROP TABLE head_entries")
    status, document = doctor(tmp_path, store)
    found = checks(document)["store.health"]
    assert found["status"] == "fail" and found["fix"] == "pcmem check --repair"
    assert status == 1


def test_a_store_held_by_a_process_that_does_not_serve_it(tmp_path: Path, store: Path, held: Any) -> None:
    holder = held(HOLD_FILE, store)
    status, document = doctor(tmp_path, store, "--deep")
    found = checks(document)
    assert found["owner"]["status"] == "fail" and found["owner"]["data"]["holder"] == holder.pid
    assert f"process {holder.pid}" in found["owner"]["summary"] and found["owner"]["fix"] == "close it there"
    assert found["store.health"]["status"] == "info"  # not read: the file is someone else's now
    assert found["store.check"]["status"] == "warn"
    assert status == 1


def test_a_store_held_by_an_older_pcmem(tmp_path: Path, store: Path, held: Any) -> None:
    """An owner that speaks an older version of the owner protocol (what a process of an older pcmem does)."""
    older = "import pcmem.owner.protocol as protocol\nprotocol.PROTOCOL_VERSION = 0\n" + HOLD_STORE
    holder = held(older, store)
    status, document = doctor(tmp_path, store)
    found = checks(document)["owner"]
    assert found["status"] == "fail" and found["data"]["holder"] == holder.pid
    assert "protocol version" in found["summary"] and "one pcmem version" in found["fix"]
    assert status == 1


def test_a_store_served_by_its_owner_is_reachable_from_an_empty_environment(tmp_path: Path, store: Path,
                                                                            held: Any) -> None:
    owner = held(HOLD_STORE, store)
    status, document = doctor(tmp_path, store)
    found = checks(document)
    assert found["owner"]["status"] == "ok" and found["owner"]["data"]["owner_pid"] == owner.pid
    assert found["owner.scrubbed"]["status"] == "ok" and found["owner.scrubbed"]["data"]["owner_pid"] == owner.pid
    assert "answered by the owner" in found["store.health"]["summary"]
    assert status == 0


def test_the_empty_environment_verdict_is_what_a_host_started_pcmem_meets(tmp_path: Path, store: Path, held: Any,
                                                                           runtime_folder: Path) -> None:
    """An owner started where the user's session has a runtime folder ($XDG_RUNTIME_DIR: a TUI, an app), and a pcmem
    started with an empty environment, as MCP hosts start `pcmem mcp`. Doctor's verdict must be what that process
    really meets (issue #39 makes it reach the owner; until then it cannot, and doctor says so)."""
    owner = held(HOLD_STORE, store, XDG_RUNTIME_DIR=str(runtime_folder))
    _, document = doctor(tmp_path, store, XDG_RUNTIME_DIR=str(runtime_folder))
    found = checks(document)
    assert found["owner"]["status"] == "ok" and found["owner"]["data"]["owner_pid"] == owner.pid
    host_started = subprocess.run(["env", "-i", "PCMEM_LOCK_TIMEOUT=0", sys.executable, "-m", "pcmem", "--db",
                                   str(store), "scopes", "--json"], capture_output=True, text=True, timeout=120,
                                  cwd=ROOT)
    assert host_started.returncode in (0, 10), host_started.stderr  # reached the owner / StoreLockedError
    assert (found["owner.scrubbed"]["status"] == "ok") == (host_started.returncode == 0), found["owner.scrubbed"]


def test_an_extra_whose_package_is_hidden(tmp_path: Path, store: Path) -> None:
    """The serve extra's FastAPI made unimportable by a finder placed first on the import path."""
    hide = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "fastapi" or name.startswith("fastapi."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
"""
    _, document = doctor(tmp_path, store, prelude=hide)
    found = checks(document)["extras.serve"]
    assert found["status"] == "warn" and found["data"]["missing"] == ["fastapi"]
    assert found["data"]["installed"] is False


def test_an_extra_that_is_not_installed(tmp_path: Path, store: Path) -> None:
    from pcmem.cli.doctor_packages import installed_version

    if installed_version("llama-index-core") is not None:
        pytest.skip("llama-index-core is installed here")
    _, document = doctor(tmp_path, store)
    found = checks(document)["extras.llama-index"]
    assert found["status"] == "info" and found["fix"] == "pip install 'pcmem[llama-index]'"
    assert found["data"]["installed"] is False


def test_onnxruntime_imported_before_pcmem(tmp_path: Path, store: Path) -> None:
    """A program that imports onnxruntime first, without the switch: run without a network (a private network
    namespace), so its telemetry cannot reach anything."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("cannot run without a network here (unshare -n)")
    status, document = doctor(tmp_path, store, prelude="import onnxruntime", wrapper=("unshare", "-n"),
                              ORT_DISABLE_TELEMETRY=None)
    found = checks(document)["offline.telemetry"]
    assert found["status"] == "fail" and found["data"]["imported_before_pcmem"] is True
    assert "import pcmem before onnxruntime" in found["fix"]
    assert status == 1


def test_the_verdict_on_an_owner_started_by_a_host_is_what_a_terminal_meets(tmp_path: Path, store: Path, held: Any,
                                                                             runtime_folder: Path) -> None:
    """The other way round: the owner started without a runtime folder in its environment (as a host starts `pcmem
    mcp`), doctor and a command run from a session that has one. Doctor's owner line must match what that command
    meets."""
    owner = held(HOLD_STORE, store)
    _, document = doctor(tmp_path, store, XDG_RUNTIME_DIR=str(runtime_folder))
    found = checks(document)
    terminal = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(store), "scopes", "--json"],
                              env=environment(tmp_path, XDG_RUNTIME_DIR=str(runtime_folder), PCMEM_LOCK_TIMEOUT="0"),
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert terminal.returncode in (0, 10), terminal.stderr
    assert (found["owner"]["status"] == "ok") == (terminal.returncode == 0), found["owner"]
    assert found["owner.scrubbed"]["data"]["owner_pid"] == owner.pid  # a host-started pcmem does reach it


def test_a_dependency_outside_its_declared_range(tmp_path: Path, store: Path) -> None:
    """An installed platformdirs older than pcmem's range (what a forced install leaves): its metadata, found first
    on the import path, says 3.0.0; pcmem declares platformdirs>=4."""
    shadow = tmp_path / "shadow"
    info = shadow / "platformdirs-3.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: platformdirs\nVersion: 3.0.0\n")
    status, document = doctor(tmp_path, store, prelude=f"import sys; sys.path.insert(0, {str(shadow)!r})")
    found = checks(document)["dependencies"]
    assert found["status"] == "fail" and found["data"]["other_versions"] == ["platformdirs 3.0.0 (pcmem needs >=4)"]
    assert found["fix"] == "pip install 'platformdirs>=4'"
    assert status == 1
