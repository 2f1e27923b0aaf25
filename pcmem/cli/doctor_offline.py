"""``pcmem doctor``: offline status (onnxruntime's telemetry) and the modes of pcmem's own folders.

onnxruntime reads ``ORT_DISABLE_TELEMETRY`` once, when it loads: only a process that turns it off *before* the first
``import onnxruntime`` is quiet (RECIPES, 2026-12-04). :func:`telemetry_state` is the one place doctor asks about it.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from pcmem.cli.doctor_findings import Finding, fail, info, ok, warn


@dataclass(frozen=True)
class TelemetryState:
    """Whether onnxruntime's telemetry is off in this process, and whether onnxruntime was imported before pcmem
    could turn it off."""

    disabled: bool
    imported_before_pcmem: bool


def telemetry_state() -> TelemetryState:
    """What :mod:`pcmem.offline` knows: the switch in this process's environment (``import pcmem`` sets it unless the
    user did), and whether onnxruntime was already loaded when pcmem was imported."""
    from pcmem import offline

    return TelemetryState(offline.telemetry_off(), offline.onnxruntime_imported_first())


def telemetry_finding(state: TelemetryState | None = None) -> Finding:
    state = state or telemetry_state()
    if state.imported_before_pcmem:
        return fail("offline.telemetry", "onnxruntime was imported before pcmem could turn its telemetry off: it "
                                         "sends DNS queries for a Microsoft host", "import pcmem before onnxruntime, "
                    "or set ORT_DISABLE_TELEMETRY=1 in the environment", **vars(state))
    if not state.disabled:
        return fail("offline.telemetry", "onnxruntime's telemetry is not turned off in this process: loading a model "
                                         "sends DNS queries for a Microsoft host",
                    "export ORT_DISABLE_TELEMETRY=1 (before anything imports onnxruntime)", **vars(state))
    return ok("offline.telemetry", "onnxruntime's telemetry is off, set before onnxruntime loads", **vars(state))


def telemetry_traces() -> Finding | None:
    """The files onnxruntime leaves when its telemetry ran (a device id), on Linux under the XDG cache folder."""
    if not sys.platform.startswith("linux"):
        return None
    import platformdirs

    folder = Path(platformdirs.user_cache_dir()) / "Microsoft" / "DeveloperTools" / ".onnxruntime"
    if not folder.exists():
        return None
    return warn("offline.traces", f"onnxruntime ran with its telemetry on here once and left {folder} (a device id)",
                f"rm -r '{folder}'", folder=str(folder))


def folder_findings() -> list[Finding]:
    """pcmem's own folders: only the user may write them (the runtime folder: enter them at all)."""
    import platformdirs

    from pcmem import system
    from pcmem.settings import cache_dir, default_db_path

    if not system.file_modes_meaningful():
        return [_key_folder(), info("files.modes", f"mode checks skipped: {system.NO_FILE_MODES}; nor is a folder "
                                                   "synced after a file is made in it (NTFS journals that itself)")]
    findings = [_runtime_folder()]
    for name, folder in (("data", default_db_path().parent), ("cache", cache_dir()),
                         ("state", Path(platformdirs.user_state_dir("pcmem", appauthor=False)))):
        finding = _private_folder(f"folders.{name}", name, folder)
        if finding is not None:
            findings.append(finding)
    return findings


def _runtime_folder() -> Finding:
    from pcmem.errors import PcmemError
    from pcmem.owner.address import runtime_folder

    try:
        folder = runtime_folder()  # made 0700 if missing, refused if unsafe: what every pcmem process does
    except PcmemError as unsafe:
        return fail("folders.runtime", f"{unsafe}", None)
    return ok("folders.runtime", f"runtime folder {folder}: mode 0700, yours (owners listen here)", folder=str(folder))


def _key_folder() -> Finding:
    """Windows: where the key every pcmem process of this user proves itself with lives (:mod:`pcmem.owner.pipes`)."""
    from pcmem.owner import pipes

    try:
        pipes.family()
        folder = pipes.key_folder()
    except OSError as error:
        return fail("folders.runtime", f"owners cannot listen: {error}", None)
    return ok("folders.runtime", f"owners meet through named pipes; their key is kept in {folder}", folder=str(folder))


def _private_folder(check: str, name: str, folder: Path) -> Finding | None:
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        return None  # made, 0700, when first needed
    except OSError as error:
        return warn(check, f"{name} folder {folder}: {error.strerror}")
    mode = stat.S_IMODE(info.st_mode)
    data = {"folder": str(folder), "mode": f"{mode:04o}"}
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return warn(check, f"{name} folder {folder} belongs to uid {info.st_uid}, not to you", None, **data)
    if mode & 0o022:
        return warn(check, f"{name} folder {folder} is writable by others (mode {mode:04o}): they could replace "
                           "what pcmem reads there", f"chmod go-w '{folder}'", **data)
    return ok(check, f"{name} folder {folder}: mode {mode:04o}, yours", **data)
