"""What the system says about another process: whether it runs, is stopped or is gone, and how to name it.

A client waits on its owner as long as the owner works (a decision rerank or an import may take minutes), but not on
an owner that cannot work: one stopped by SIGSTOP (Ctrl-Z, a debugger, a suspended job) still holds the store's lock
and its socket accepts connections, so without asking the system a client would wait for ever. Linux says in
``/proc/PID/stat``; macOS (and the other Unix systems) through ``ps -o stat= -p PID`` — the one program every one of
them has, reading the state the kernel keeps (``sysctl`` KERN_PROC's ``struct kinfo_proc`` via ctypes would save a
process start per look, at the price of a layout to keep per system). Windows has no stopped state to ask about
(``"unknown"``): there a client that waits for a held store names an owner that does not answer
(:func:`pcmem.owner.dial.nobody_answers`).

Standard library only: ``pcmem search`` beside an owner uses it without importing pydantic or DuckDB.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pcmem import system

ProcessState = Literal["running", "stopped", "gone", "unknown"]

#: /proc/PID/stat states of a process that cannot run until someone resumes it: T (stopped by a signal), t (stopped
#: by a tracer: a debugger at a breakpoint).
_STOPPED = frozenset("Tt")
#: Z (exited, not reaped yet) and X (dead): its descriptors, its socket and its locks are closed already.
_GONE = frozenset("ZX")
_PROC = Path("/proc")


def state(pid: int) -> ProcessState:
    """Whether process ``pid`` runs (or sleeps: it will answer), is stopped, or is gone."""
    if pid <= 0 or system.KIND == "windows":
        return "unknown"
    code = _proc_state(pid) if system.KIND == "linux" else _ps_state(pid)
    if code is None:
        return "unknown"
    if not code:
        return "gone"
    return _meaning(code[:1])


def _proc_state(pid: int) -> str | None:
    """The state letter in ``/proc/PID/stat``; ``""`` when there is no such process, ``None`` when unreadable."""
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    # "PID (COMM) S ...": the command may hold spaces and parentheses, so the state follows the last ")"
    return text.rpartition(")")[2].strip()[:1] or None


#: Seconds a state ``ps`` gave is reused: a client looks at a silent owner five times a second, and a process start
#: each time would cost more than /proc's read; a stop is still seen within STOPPED_FOR (:mod:`pcmem.owner.dial`).
_PS_REUSE = 0.45
_ps_seen: dict[int, tuple[float, str | None]] = {}


def _ps_state(pid: int) -> str | None:
    now = time.monotonic()
    seen = _ps_seen.get(pid)
    if seen is not None and now - seen[0] < _PS_REUSE:
        return seen[1]
    code = _ps(pid, "stat")
    _ps_seen.clear()  # one owner is watched at a time: keep only the last answer
    _ps_seen[pid] = (now, code)
    return code


#: Where ``ps`` is (a fixed path first: a process started with ``env -i`` has no PATH).
_PS_PLACES = ("/bin/ps", "/usr/bin/ps")
#: Seconds ``ps`` may take (it reads one process's entry).
_PS_TIMEOUT = 5.0


def _ps(pid: int, field: str) -> str | None:
    """``ps -o FIELD= -p PID``'s answer: ``""`` when there is no such process, ``None`` when ps cannot say. ps'
    state letters are the kernel's, as in ``/proc`` (T stopped, Z zombie, R/S/I/U/D running or waiting)."""
    import subprocess  # here: a process on Linux never needs it

    program = next((place for place in _PS_PLACES if Path(place).is_file()), None) or shutil.which("ps")
    if program is None:
        return None
    try:
        done = subprocess.run([program, "-o", f"{field}=", "-p", str(pid)], capture_output=True, text=True,
                              errors="replace", timeout=_PS_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    answer = done.stdout.strip()
    if done.returncode != 0 and not answer:
        return ""  # ps exits 1 and says nothing for a pid that does not exist
    return answer or None


def _meaning(code: str) -> ProcessState:
    if code in _STOPPED:
        return "stopped"
    if code in _GONE:
        return "gone"
    return "running"


def command_line(pid: int, limit: int = 120) -> str:
    """Process ``pid``'s command line as a person would type it (``python app.py``: paths by their last part), or
    its name where the command line is unreadable, shortened to ``limit``."""
    if system.KIND == "windows":
        return ""
    if system.KIND != "linux":
        return _shorten(" ".join(_words(_ps(pid, "command") or "")), limit)
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
        text = " ".join(_words(word.decode("utf-8", errors="replace") for word in raw.rstrip(b"\0").split(b"\0")))
        if not text.strip():
            text = (_PROC / str(pid) / "comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    return _shorten(text, limit)


def _words(words: str | Iterable[str]) -> list[str]:
    """A command's words, paths by their last part (``/usr/bin/python3`` → ``python3``)."""
    listed = words.split() if isinstance(words, str) else list(words)
    return [Path(word).name if word.startswith("/") else word for word in listed]


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())  # a `python -c` program's newlines
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(pid: int | None) -> str:
    """``process 1234 (python app.py)``, or ``another process`` when the system does not say which."""
    if not pid:
        return "another process"
    command = command_line(pid)
    return f"process {pid} ({command})" if command else f"process {pid}"


def stopped_advice(pid: int) -> str:
    """What to do about a stopped owner, in one line."""
    return (f"resume it with `kill -CONT {pid}` (or `fg` in the terminal that stopped it), or end it with "
            f"`kill {pid}`; until then no process can use the store: a stopped process keeps its lock on the file")
