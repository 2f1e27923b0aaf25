"""pcmem on Windows and macOS as far as Linux can run them (#41): real processes under the shims of ``tests/emulate/``
(each shim's docstring says what it emulates and what it cannot).

Under the Windows shim — the names Windows' CPython lacks removed (``os.getuid``, ``os.O_CLOEXEC``, ``socket.AF_UNIX``,
``signal.SIGHUP``, ``fcntl``, ``pwd``, …) and pcmem told it runs on Windows — the manual's Python examples, the CLI
and an MCP session work, ``pcmem serve`` and ``pcmem tui`` import, and where no transport can listen (the named pipe
is Windows' own) a second process is told the store is in use, in one line; with a Unix socket standing in for the
named pipe, two processes share a store through the pipe transport and one takes it over. Under the macOS shim — no
``SO_PEERCRED``, the 104-byte socket path, ``struct flock`` in macOS's layout, no ``/proc`` — two processes meet and
check each other's uid, a long home is replaced by the short per-user folder, the lock's holder is named, and a
stopped owner is seen through ``ps``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from docs_pages import Block, blocks
from store_processes import HOLDER

from pcmem.private_files import STAGING_SUFFIX

EMULATE = Path(__file__).resolve().parents[1] / "emulate"
SYSTEMS = ("windows", "macos")


def emulated(system: str, **extra: str) -> dict[str, str]:
    """The environment of a process that runs under ``system``'s shim."""
    inherited = os.environ.get("PYTHONPATH")
    shim = str(EMULATE / system) + (os.pathsep + inherited if inherited else "")
    return {**os.environ, "PYTHONPATH": shim, **extra}


def python(system: str, program: str, *args: str, cwd: Path | None = None,
           **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", program, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=emulated(system, **extra))


def pcmem_cli(system: str, store: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pcmem", "--db", str(store), *args], capture_output=True, text=True,
                          timeout=600, env=emulated(system, **extra))


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_shim_is_in_place(system: str) -> None:
    """Without this, every test below would pass on Linux for nothing."""
    program = ("import os, socket, signal, pcmem.system as s; from pcmem.owner import transport as t;"
               "print(s.KIND, hasattr(os, 'getuid'), hasattr(socket, 'AF_UNIX'), hasattr(signal, 'SIGHUP'),"
               " hasattr(socket, 'SO_PEERCRED'), t.current().name)")
    done = python(system, program)
    assert done.returncode == 0, done.stderr
    if system == "windows":
        assert done.stdout.split() == ["windows", "False", "False", "False", "False", "pipe"]
        for module in ("fcntl", "pwd", "grp", "termios"):
            assert python(system, f"import {module}").returncode == 1
    else:
        assert done.stdout.split() == ["macos", "True", "True", "True", "False", "unix"]
        assert python(system, "open('/proc/self/stat')").returncode == 1


#: The manual's Python examples (README.md and docs/, as tests/docs/test_docs_examples.py runs them) but those of other
#: stores (seekdb: embedded seekdb is Linux's and macOS's), of a local generation model and of a live `pcmem serve`
#: (tests/docs/test_docs_examples.py and tests/serve/test_serve_docs.py run those on Linux).
_ELSEWHERE = ("seekdb:", "llama-cpp:", "http://127.0.0.1:8765")
EXAMPLES = [block for block in blocks("python") if not any(marker in block.code for marker in _ELSEWHERE)]


def test_the_examples_are_found() -> None:
    """Without this, an emptied list (the pages moved again) would run nothing and pass."""
    assert len(EXAMPLES) >= 5 and "docs/getting-started/python.md" in {block.page for block in EXAMPLES}


@pytest.mark.parametrize("block", EXAMPLES, ids=[block.id for block in EXAMPLES])
@pytest.mark.parametrize("system", SYSTEMS)
def test_the_docs_examples_run(system: str, block: Block, tmp_path: Path) -> None:
    done = python(system, block.code, cwd=tmp_path)
    assert done.returncode == 0, f"{block.id}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_cli_works(system: str, tmp_path: Path) -> None:
    store = tmp_path / "memory.duckdb"
    steps = [
        ("remember", "--scope", "team", "Releases go out on Thursdays."),
        ("search", "--scope", "team", "when do releases go out?"),
        ("list", "--scope", "team", "--json"),
        ("scopes",),
        ("check",),
        ("export", "--scope", "team", "--output", str(tmp_path / "team.jsonl")),
        ("--db", str(tmp_path / "copy.duckdb"), "import", str(tmp_path / "team.jsonl")),
        ("migrate", "--from", str(store), "--to", str(tmp_path / "migrated.duckdb")),
        ("where",),
    ]
    for step in steps:
        done = pcmem_cli(system, store, *step)
        assert done.returncode == 0, f"{step}: {done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr and "AttributeError" not in done.stderr
    assert "Thursdays" in pcmem_cli(system, store, "search", "--scope", "team", "release").stdout
    assert not list(tmp_path.glob(f"*{STAGING_SUFFIX}")), "a new store's staging folder is removed"
    doctor = pcmem_cli(system, store, "doctor", "--json")
    said = {check["id"]: check["summary"] for check in json.loads(doctor.stdout)["checks"]}
    assert "Traceback" not in doctor.stderr
    if system == "windows":
        assert said["files.modes"].startswith("mode checks skipped: Windows has no file modes")
        assert "mode" not in said["store.file"] and "mode" not in said["folders.runtime"]
    else:
        assert said["store.file"].endswith("mode 0600, yours") and "files.modes" not in said


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_process_started_with_an_empty_environment_works(system: str, tmp_path: Path) -> None:
    """As ``env -i`` starts it (an MCP host's scrubbed environment): no HOME, no PATH. Windows finds the user's
    folders without the environment (see the shim), macOS through the password database."""
    store = tmp_path / "memory.duckdb"
    for step in (("remember", "--scope", "t", "Deploys happen on Fridays."), ("search", "--scope", "t", "deploys")):
        done = subprocess.run([sys.executable, "-m", "pcmem", "--db", str(store), *step], capture_output=True,
                              text=True, timeout=600, env={"PYTHONPATH": str(EMULATE / system)})
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "Fridays" in done.stdout


@pytest.mark.parametrize("system", SYSTEMS)
async def test_serve_mcp_and_tui_import_and_mcp_serves(system: str, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    imports = python(system, "import pcmem.serve.app, pcmem.serve.http_server, pcmem.serve.stdio, pcmem_tui.app;"
                             "from pcmem.serve.shutdown import STOP_SIGNALS; print(len(STOP_SIGNALS))")
    assert imports.returncode == 0, imports.stderr
    assert imports.stdout.split() == (["1"] if system == "windows" else ["2"])  # SIGTERM (+ SIGHUP)
    for command in ("serve", "mcp", "tui"):
        helped = pcmem_cli(system, tmp_path / "m.duckdb", command, "--help")
        assert helped.returncode == 0 and "Usage:" in helped.stdout, helped.stderr
    server = StdioServerParameters(command=sys.executable, args=["-m", "pcmem", "--db", str(tmp_path / "m.duckdb"),
                                                                "mcp"], env=emulated(system))
    async with Client(server) as client:
        await client.call_tool("remember_memory", {"scope_id": "agent", "text": "The user prefers Helix."})
        found = await client.call_tool("search_memory", {"scope_id": "agent", "query": "which editor does the user prefer?"})
        assert "Helix" in found.content[0].text


#: The TUI on Textual's headless driver (as its own tests run it): the scopes screen lists the store's scope, enter
#: opens it, and its entry is listed.
TUI = r"""
import asyncio, sys
import pcmem
from pcmem_tui.app import make_app

with pcmem.open(sys.argv[1], embedder=None) as runtime:
    runtime.memory.for_scope("notes").remember("Releases go out on Thursdays.", entry_id="release-day")


async def wait_for(pilot, done):
    for _ in range(600):
        await pilot.pause(0.05)
        if done():
            return


async def main():
    app = make_app(sys.argv[1], embedder=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: any("1 scope" in str(w.render()) for w in app.screen.query("#title")))
        print(type(app.screen).__name__, flush=True)
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "EntriesScreen"
                       and app.screen.query("ListTable").first().row_keys == ["release-day"])
        print(type(app.screen).__name__, *app.screen.query("ListTable").first().row_keys, flush=True)
        await pilot.press("q")

asyncio.run(main())
"""


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_tui_runs_headless(system: str, tmp_path: Path) -> None:
    done = python(system, TUI, str(tmp_path / "memory.duckdb"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["ScopesScreen", "EntriesScreen release-day"]


#: Opens the store beside the holder and says what it became: "ClientRuntime <owner pid> <head revision>".
PROBE = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None, lock_timeout=10) as runtime:
    print(type(runtime).__name__, runtime.owner_pid, runtime.memory.for_scope("p").head().revision, flush=True)
"""


def hold(system: str, path: Path, *args: str, prelude: str = "", **extra: str) -> subprocess.Popen[str]:
    owner = subprocess.Popen([sys.executable, "-c", prelude + HOLDER, str(path), *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=emulated(system, **extra))
    assert owner.stdout is not None and owner.stdout.readline() == "ready\n", owner.communicate(timeout=60)
    return owner


def release(owner: subprocess.Popen[str]) -> str:
    if owner.poll() is None:
        os.kill(owner.pid, signal.SIGCONT)
    _, err = owner.communicate(timeout=120)
    return err


def test_windows_without_a_transport_a_second_process_is_told_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    owner = hold("windows", path)
    try:
        refused = pcmem_cli("windows", path, "list", "--scope", "p", PCMEM_LOCK_TIMEOUT="1")
        assert refused.returncode == 10, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "is in use by another process" in lines[0], refused.stderr
        assert "neither named pipes nor Unix sockets" in lines[0]
    finally:
        said = release(owner)
    assert "is not served to other processes: this system has neither named pipes nor Unix sockets" in said


#: A client that writes, waits for a line (the test kills the owner meanwhile), then writes again: it takes over.
CLIENT = r"""
import sys, pcmem
with pcmem.open(sys.argv[1], embedder=None, lock_timeout=30) as runtime:
    scope = runtime.memory.for_scope("p")
    print(type(runtime).__name__, runtime.owner_pid, scope.remember("from the client").memory.revision, flush=True)
    sys.stdin.readline()
    print(scope.remember("after the owner died").memory.revision, len(scope.list().entries), flush=True)
"""


def test_windows_through_a_stand_in_pipe_a_store_is_shared_and_taken_over(tmp_path: Path) -> None:
    """pcmem's pipe transport under the Windows shim, a Unix socket standing in for the named pipe (see the shim):
    the key made under Windows' branch, the challenge, a client's writes through the owner, a take-over after the
    owner is killed — every acknowledged write kept."""
    stand_in = {"PCMEM_EMULATED_PIPE": "unix", "XDG_DATA_HOME": str(tmp_path / "data")}
    path = tmp_path / "store.duckdb"
    owner = hold("windows", path, **stand_in)
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=emulated("windows", **stand_in))
    try:
        assert client.stdout is not None
        assert client.stdout.readline().split() == ["ClientRuntime", str(owner.pid), "2"], client.stderr
        run = tmp_path / "data" / "pcmem" / "run"  # platformdirs' data folder (%LOCALAPPDATA% on Windows)
        assert (run / "owner.key").stat().st_mode & 0o777 == 0o600 and list(run.glob("*.pipe.sock"))
        owner.kill()
        owner.communicate(timeout=60)
        out, err = client.communicate("go on\n", timeout=120)
        assert client.returncode == 0, err
        assert out.split() == ["3", "3"], "every acknowledged write is there, and the client writes on"
        assert "Traceback" not in err
    finally:
        for process in (owner, client):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=60)


def test_windows_a_stopped_owner_is_named_as_not_answering(tmp_path: Path) -> None:
    """Windows has no stopped state to ask about: a new process waits its lock timeout, then is told in one line that
    the owner listens but does not answer (not that the file was opened by something that does not serve it)."""
    stand_in = {"PCMEM_EMULATED_PIPE": "unix", "XDG_DATA_HOME": str(tmp_path / "data")}
    path = tmp_path / "store.duckdb"
    owner = hold("windows", path, **stand_in)
    try:
        os.kill(owner.pid, signal.SIGSTOP)
        refused = pcmem_cli("windows", path, "list", "--scope", "p", PCMEM_LOCK_TIMEOUT="1", **stand_in)
        assert refused.returncode == 10, refused.stderr
        [line] = refused.stderr.strip().splitlines()
        assert "and the pcmem owner listening at" in line and "did not answer within 1 s: it is suspended" in line
    finally:
        release(owner)


def test_windows_a_killed_writer_loses_nothing(tmp_path: Path) -> None:
    """The next open replays the log a killed owner left (read in binary mode: the shim fails a text-mode open)."""
    path = tmp_path / "store.duckdb"
    owner = hold("windows", path)
    owner.kill()
    owner.communicate(timeout=60)
    assert Path(f"{path}.wal").exists(), "the write is in the log only"
    listed = pcmem_cli("windows", path, "list", "--scope", "p", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [entry["entry"]["text"] for entry in json.loads(listed.stdout)["entries"]] == ["held"]


def test_macos_two_processes_meet_and_know_each_other(tmp_path: Path) -> None:
    program = ("import os, socket; from pcmem.owner import transport as t; a, b = socket.socketpair();"
               "print(t.current().peer(a) == t.Peer(os.getpid(), os.getuid()))")
    peer = python("macos", program)
    assert peer.stdout.split() == ["True"], peer.stderr
    path = tmp_path / "store.duckdb"
    owner = hold("macos", path)
    try:
        met = python("macos", PROBE, str(path))
        assert met.stdout.split() == ["ClientRuntime", str(owner.pid), "1"], met.stderr
    finally:
        release(owner)


#: Run first: the account's home is argv[2] (a long one), not the password database's.
LONG_HOME = r"""
import sys
from pathlib import Path
from pcmem.owner import address
_home = Path(sys.argv.pop(2))
address._account_home = lambda uid: _home
"""


def test_macos_a_home_too_long_for_a_socket_address_uses_the_short_user_folder(tmp_path: Path) -> None:
    home = tmp_path.joinpath(*["a-rather-long-folder-name"] * 4)
    home.mkdir(parents=True, mode=0o700)
    short = Path(tempfile.mkdtemp(prefix="T", dir="/tmp"))
    path = tmp_path / "store.duckdb"
    owner = hold("macos", path, str(home), prelude=LONG_HOME, PCMEM_EMULATED_DARWIN_TEMP=str(short))
    try:
        met = python("macos", LONG_HOME + PROBE, str(path), str(home), PCMEM_EMULATED_DARWIN_TEMP=str(short))
        assert met.stdout.split() == ["ClientRuntime", str(owner.pid), "1"], met.stderr
        assert len(list((short / "pcmem").glob("*.sock"))) == 1
        assert not list((home / ".cache" / "pcmem" / "run").glob("*.sock"))
    finally:
        release(owner)
        shutil.rmtree(short, ignore_errors=True)


def test_macos_the_lock_holder_is_named_from_macos_flock_layout(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    owner = hold("macos", path)
    try:
        asked = python("macos", "import sys; from pathlib import Path; from pcmem.store.duckdb.lock_probe import "
                                "lock_holder; print(lock_holder(Path(sys.argv[1])))", str(path))
        assert asked.stdout.split() == [str(owner.pid)], asked.stderr
    finally:
        release(owner)


def test_macos_a_stopped_owner_is_seen_through_ps(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    owner = hold("macos", path)
    try:
        os.kill(owner.pid, signal.SIGSTOP)
        stopped = pcmem_cli("macos", path, "list", "--scope", "p", PCMEM_LOCK_TIMEOUT="120")
        assert stopped.returncode == 10, stopped.stderr
        assert f"process {owner.pid} (" in stopped.stderr and "is stopped" in stopped.stderr
        assert f"kill -CONT {owner.pid}" in stopped.stderr
    finally:
        release(owner)
