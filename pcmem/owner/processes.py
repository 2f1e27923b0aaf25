"""What the system says about another process: whether it runs, is stopped or is gone, and how to name it.

A client waits on its owner as long as the owner works (a decision rerank or an import may take minutes), but not on
an owner that cannot work: one stopped by SIGSTOP (Ctrl-Z, a debugger, a suspended job) still holds the store's lock
and its socket accepts connections, so without asking the system a client would wait for ever. Linux says in
``/proc/PID/stat``; where the system does not say (``"unknown"``: no ``/proc``), a client waits as before (macOS and
Windows ask their own system).

Standard library only: ``pcmem search`` beside an owner uses it without importing pydantic or DuckDB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

ProcessState = Literal["running", "stopped", "gone", "unknown"]

#: /proc/PID/stat states of a process that cannot run until someone resumes it: T (stopped by a signal), t (stopped
#: by a tracer: a debugger at a breakpoint).
_STOPPED = frozenset("Tt")
#: Z (exited, not reaped yet) and X (dead): its descriptors, its socket and its locks are closed already.
_GONE = frozenset("ZX")
_PROC = Path("/proc")


def state(pid: int) -> ProcessState:
    """Whether process ``pid`` runs (or sleeps: it will answer), is stopped, or is gone."""
    if pid <= 0 or not _PROC.is_dir():
        return "unknown"
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return "gone"
    except OSError:
        return "unknown"
    # "PID (COMM) S ...": the command may hold spaces and parentheses, so the state follows the last ")"
    code = text.rpartition(")")[2].strip()[:1]
    if code in _STOPPED:
        return "stopped"
    if code in _GONE:
        return "gone"
    return "running"


def command_line(pid: int, limit: int = 120) -> str:
    """Process ``pid``'s command line as a person would type it (``python app.py``: paths by their last part), or
    its name where the command line is unreadable, shortened to ``limit``."""
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
        words = [word.decode("utf-8", errors="replace") for word in raw.rstrip(b"\0").split(b"\0")]
        text = " ".join(Path(word).name if word.startswith("/") else word for word in words).strip()
        if not text:
            text = (_PROC / str(pid) / "comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
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
