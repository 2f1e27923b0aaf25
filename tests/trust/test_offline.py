"""Fully offline, proven (issue #38, item 2): every surface — the library, the CLI, the TUI, ``pcmem serve``, ``pcmem
mcp`` and a benchmark with the processes it starts — runs as a real process under ``strace -f``, native code
included, with the embedding model loaded and kept alive past the moment onnxruntime's telemetry used to look its
host up (~9 s after the import, then again). The test fails on any connection or datagram to an internet address
(a DNS query is one), a bind to anything but loopback, and on any file written outside the store's folder and
pcmem's own folders (HOME and every XDG folder point into the test's folder, and are compared before and after).

The surfaces run side by side to keep the test's time to about one surface's (~30 s on a busy 2-core machine).
``strace`` is installed by .ci/run where it is missing; the test skips only when it is absent or cannot trace here.
"""

from __future__ import annotations

import http.client
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import pcmem
import pcmem_bench
import pcmem_tui

pytestmark = pytest.mark.slow

#: How long each surface stays alive with its model loaded: onnxruntime 1.32.0 looked its telemetry host up ~9 s
#: after the import (RECIPES.md), repeated afterwards.
ALIVE = 15.0
TRACED = "socket,connect,bind,sendto,sendmsg,sendmmsg,openat,mkdir,rename"
PCMEM = [sys.executable, "-m", "pcmem"]
STRACE = shutil.which("strace")


def _strace_works() -> str | None:
    if STRACE is None:
        return "strace is not installed (apt-get install strace; .ci/run installs it)"
    done = subprocess.run([STRACE, "-f", "-qq", "-e", "trace=none", "true"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"strace cannot trace here: {done.stderr.strip()[:200]}"


@dataclass
class Home:
    """A user's home and XDG folders inside the test's folder; the stores live in ``data``."""

    root: Path
    runtime: Path  # XDG_RUNTIME_DIR: short (a Unix socket path has ~100 bytes), so it lives in /tmp
    folders: dict[str, Path] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.root / "data"

    def environment(self) -> dict[str, str]:
        """A clean environment, as ``env -i`` would give: none of the offline variables is set by the test."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                "HOME": str(self.root), "XDG_RUNTIME_DIR": str(self.runtime), "TMPDIR": str(self.folders["TMPDIR"]),
                **{name: str(path) for name, path in self.folders.items() if name.startswith("XDG_")}}

    def allowed(self, *, passing: bool) -> list[Path]:
        """Where pcmem may write: the stores' folder and pcmem's own folders; ``passing``: files that are gone
        again may also be anywhere in the temporary folder (Python's tempfile creates one there to test it)."""
        return [self.data, *(self.folders[name] / "pcmem" for name in
                             ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")),
                self.runtime / "pcmem", self.folders["TMPDIR"] / ("" if passing else "pcmem-")]


@pytest.fixture
def home(tmp_path) -> Iterator[Home]:
    reason = _strace_works()
    if reason:
        pytest.skip(reason)
    runtime = Path(tempfile.mkdtemp(prefix="pcm", dir="/tmp"))
    made = Home(tmp_path / "home", runtime)
    for name, relative in (("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state"),
                           ("XDG_DATA_HOME", ".local/share"), ("XDG_CONFIG_HOME", ".config"), ("TMPDIR", "tmp")):
        made.folders[name] = made.root / relative
        made.folders[name].mkdir(parents=True, mode=0o700)
    made.data.mkdir()
    yield made
    shutil.rmtree(runtime, ignore_errors=True)


def _files(root: Path) -> dict[Path, tuple[int, int]]:
    return {path: (path.stat().st_size, path.stat().st_mtime_ns) for path in root.rglob("*") if path.is_file()}


class Surface:
    """One surface as a process under strace; ``drive`` talks to it, then it is stopped and its trace read."""

    def __init__(self, name: str, home: Home, command: list[str], **popen: object) -> None:
        self.name, self.home = name, home
        self.trace = home.root / f"trace-{name}.txt"
        self.process = subprocess.Popen([STRACE, "-f", "-qq", "-s", "0", "-e", f"trace={TRACED}",
                                         "-o", str(self.trace), "--", *command],
                                        env=home.environment(), cwd=home.data, start_new_session=True,
                                        **popen)  # type: ignore[call-overload]

    def stop(self, grace: float = 0.0) -> None:
        """Let the process end by itself within ``grace`` seconds, else SIGTERM its process group (strace and the
        traced processes: the surface closes as a service manager would stop it)."""
        if self.process.stdin is not None:
            self.process.stdin.close()  # an MCP host leaving
        try:
            self.process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            pass
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


_CONNECTS = re.compile(r"\b(connect|sendto|sendmsg|sendmmsg)\(.*sa_family=AF_INET6?\b")
_BIND = re.compile(r"\bbind\(.*sa_family=(AF_INET6?)\b(.*)")
_LOOPBACK = re.compile(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"')
_RESOLVER = re.compile(r'connect\(.*sun_path="[^"]*(resolve|dns)[^"]*"', re.IGNORECASE)
_WRITE = re.compile(r'\bopenat\((AT_FDCWD|-?\d+), "([^"]+)", ([A-Z_|]+)')
_MKDIR = re.compile(r'\bmkdir\("([^"]+)"')


def violations(trace: str, home: Home) -> list[str]:
    """Every line of ``trace`` that reaches the network, asks a resolver, or writes outside the allowed folders."""
    found = []
    for line in trace.splitlines():
        if _CONNECTS.search(line) or _RESOLVER.search(line):
            found.append(line)
        elif (bound := _BIND.search(line)) and not _LOOPBACK.search(bound.group(2)):
            found.append(line)
        elif (opened := _WRITE.search(line)) and any(flag in opened.group(3) for flag in ("O_WRONLY", "O_RDWR",
                                                                                             "O_CREAT")):
            if not _writable(opened.group(2), home, passing=True) and "= -1" not in line:
                found.append(line)
        elif (made := _MKDIR.search(line)) and not _writable(made.group(1), home, passing=True) and "= -1" not in line:
            found.append(line)
    return found


#: pcmem's own code: ``pcmem bench startup`` compiles its bytecode first, as an installed package's would be.
_PACKAGES = tuple(str(Path(module.__file__).parent) + "/" for module in (pcmem, pcmem_bench, pcmem_tui))


def _writable(path: str, home: Home, *, passing: bool) -> bool:
    if path.startswith(("/dev/null", "/dev/tty", "/dev/pts/", "/dev/ptmx", "/dev/shm/", "/proc/self/")):
        return True
    if path.startswith(_PACKAGES) and "/__pycache__/" in path:
        return True
    full = os.path.normpath(path if path.startswith("/") else home.data / path)
    return any(full == str(root) or full.startswith(str(root).rstrip("/") + ("" if str(root).endswith("-") else "/"))
               for root in home.allowed(passing=passing))


# --- the surfaces -----------------------------------------------------------------------------------------------

LIBRARY = """
import sys, time, pcmem
with pcmem.open(sys.argv[1]) as runtime:
    scope = runtime.memory.for_scope("s")
    scope.remember("kiwis grow on vines in the library's store")
    assert scope.search("kiwi").hits
    import onnxruntime  # loaded by the embedder: the surface must have it
    print("loaded", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _library(home: Home) -> Surface:
    surface = Surface("library", home, [sys.executable, "-c", LIBRARY, "library.duckdb", str(ALIVE)],
                      stdout=subprocess.PIPE, text=True)
    return surface


def _cli(home: Home) -> Surface:
    script = (f"{' '.join(PCMEM)} --db cli.duckdb remember --scope s 'kiwis grow on vines' && "
              f"{' '.join(PCMEM)} --db cli.duckdb search --scope s kiwi && "
              f"{' '.join(PCMEM)} --db cli.duckdb check")
    return Surface("cli", home, ["/bin/sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _bench(home: Home) -> Surface:
    return Surface("bench", home, [*PCMEM, "bench", "startup", "--entries", "20", "--repeats", "1"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _serve(home: Home) -> Surface:
    return Surface("serve", home, [*PCMEM, "--db", "serve.duckdb", "serve", "--port", "0", "--json"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _drive_serve(surface: Surface) -> None:
    assert surface.process.stdout is not None
    url = json.loads(surface.process.stdout.readline())["url"]
    host, port = url.split("//")[1].rstrip("/").split(":")
    for path, body in (("/v1/memory/remember", {"scope_id": "s", "kind": "fact", "text": "kiwis grow on vines"}),
                       ("/v1/memory/search", {"scope_id": "s", "query": "kiwi"})):
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        answer = connection.getresponse()
        assert answer.status == 200, answer.read()
        connection.close()


def _mcp(home: Home) -> Surface:
    return Surface("mcp", home, [*PCMEM, "--db", "mcp.duckdb", "mcp"], stdin=subprocess.PIPE,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _drive_mcp(surface: Surface) -> None:
    stdin, stdout = surface.process.stdin, surface.process.stdout
    assert stdin is not None and stdout is not None
    calls = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "remember_memory", "arguments": {"scope_id": "s", "kind": "fact", "text": "kiwis grow on vines"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_memory", "arguments": {"scope_id": "s", "query": "kiwi"}}}]
    for call in calls:
        stdin.write(json.dumps(call) + "\n")
        stdin.flush()
        if "id" in call:
            answer = json.loads(stdout.readline())
            assert "result" in answer and not answer["result"].get("isError"), answer


class _Tui(Surface):
    def __init__(self, home: Home) -> None:
        subprocess.run([*PCMEM, "--db", "tui.duckdb", "remember", "--scope", "notes", "kiwis grow on vines"],
                       env=home.environment(), cwd=home.data, check=True, capture_output=True)
        self.controller, terminal = pty.openpty()
        super().__init__("tui", home, [*PCMEM, "--db", "tui.duckdb", "tui"], stdin=terminal, stdout=terminal,
                         stderr=terminal)
        os.close(terminal)
        self.screen = b""

    def read(self, seconds: float, until: bytes | None = None) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and (until is None or until not in self.screen):
            if select.select([self.controller], [], [], 0.1)[0]:
                try:
                    self.screen += os.read(self.controller, 65536)
                except OSError:
                    return

    def stop(self, grace: float = 0.0) -> None:
        super().stop(grace)
        os.close(self.controller)


def _tui(home: Home) -> Surface:
    return _Tui(home)


def _drive_tui(surface: Surface) -> None:
    assert isinstance(surface, _Tui)
    surface.read(60, until=b"notes")
    assert b"notes" in surface.screen, "the TUI never showed its scopes"


SURFACES: dict[str, tuple[Callable[[Home], Surface], Callable[[Surface], None] | None]] = {
    "library": (_library, lambda surface: None),
    "cli": (_cli, None),
    "tui": (_tui, _drive_tui),
    "serve": (_serve, _drive_serve),
    "mcp": (_mcp, _drive_mcp),
    "bench": (_bench, None),
}


def test_no_surface_touches_the_network_or_writes_outside_pcmem_s_folders(home):
    before = _files(home.root)
    surfaces = {name: start(home) for name, (start, _) in SURFACES.items()}
    try:
        for name, (_, drive) in SURFACES.items():
            if drive is not None:
                drive(surfaces[name])
        library = surfaces["library"].process.stdout
        assert library is not None and library.readline().strip() == "loaded"
        deadline = time.monotonic() + ALIVE  # every long-lived surface has its model loaded now: keep them alive
        for name in ("cli", "bench"):
            assert surfaces[name].process.wait(180) == 0, surfaces[name].process.communicate()
        time.sleep(max(deadline - time.monotonic(), 0))
    finally:
        for name, surface in surfaces.items():
            surface.stop(grace=30 if name == "library" else 0)  # the library ends by itself after ALIVE
    traces = {name: surface.trace.read_text(errors="replace") for name, surface in surfaces.items()}
    found = {name: lines for name, trace in traces.items() if (lines := violations(trace, home))}
    assert not found, "\n".join(f"{name}: {line}" for name, lines in found.items() for line in lines[:8])
    loaded = {name: "onnxruntime" in trace for name, trace in traces.items()}
    assert loaded == dict.fromkeys(SURFACES, True), "a surface never loaded the embedding model"
    written = sorted(str(path.relative_to(home.root)) for path, seen in _files(home.root).items()
                     if before.get(path) != seen and not path.name.startswith("trace-")
                     and not _writable(str(path), home, passing=False))
    assert written == []


# --- the environment, in one place ---------------------------------------------------------------------------------

CLEAN = {key: value for key, value in os.environ.items()
         if key not in ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY", "HF_HUB_OFFLINE", "DO_NOT_TRACK")}


def _python(code: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**CLEAN, **extra})


SHOW = "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('ORT_DISABLE_TELEMETRY', " \
       "'HF_HUB_DISABLE_TELEMETRY', 'HF_HUB_OFFLINE', 'DO_NOT_TRACK')}))"


def test_import_pcmem_turns_telemetry_off_and_leaves_the_host_s_downloads_alone():
    done = _python(f"import pcmem; {SHOW}")
    assert json.loads(done.stdout) == {"ORT_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                                       "HF_HUB_OFFLINE": None, "DO_NOT_TRACK": None}
    assert done.stderr == ""


def test_the_processes_pcmem_runs_are_offline_too_and_a_user_s_own_value_is_kept():
    from pcmem import offline

    environ = {"HF_HUB_OFFLINE": "0", "ORT_DISABLE_TELEMETRY": "true"}
    offline.apply(environ, own_process=True)
    assert environ == {"HF_HUB_OFFLINE": "0", "ORT_DISABLE_TELEMETRY": "true", "HF_HUB_DISABLE_TELEMETRY": "1",
                       "DO_NOT_TRACK": "1"}
    assert offline.problems(environ) == [
        "HF_HUB_OFFLINE='0' is set: the model hub client may download (only --embedder fastembed:MODEL asks it to)"]
    assert offline.problems({"ORT_DISABLE_TELEMETRY": "0"})[0].startswith("ORT_DISABLE_TELEMETRY='0' is set")


def test_onnxruntime_imported_before_pcmem_is_reported_once():
    """pcmem cannot undo it: one warning on stderr, and offline.problems() names it (for ``pcmem doctor``)."""
    early = _python("import onnxruntime, pcmem; from pcmem import offline; print(offline.problems()[0][:37])")
    assert early.stdout.strip() == "onnxruntime was imported before pcmem"
    assert early.stderr.count("onnxruntime was imported before pcmem") == 1
    problems = "from pcmem import offline; print(offline.problems())"
    told = _python(f"import onnxruntime, pcmem; {problems}", ORT_DISABLE_TELEMETRY="1")  # set before the import
    late = _python(f"import pcmem, onnxruntime; {problems}")
    assert (told.stdout, told.stderr, late.stdout, late.stderr) == ("[]\n", "", "[]\n", "")
