"""The environment that keeps pcmem's dependencies offline, set in one place before any of them is imported.

pcmem itself never opens a network connection, but a dependency can: ``import onnxruntime`` (1.32.0) looks up a
Microsoft telemetry host a few seconds later, again and again, and writes a device id and a database of the
machine's details under ``$XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime``; only ``ORT_DISABLE_TELEMETRY``
set *before* the import stops it (``onnxruntime.disable_telemetry_events()`` does not). So ``import pcmem`` sets:

- in any process (a library must not change what its host does, and these only switch telemetry off):
  ``ORT_DISABLE_TELEMETRY=1`` and ``HF_HUB_DISABLE_TELEMETRY=1``;
- in the processes pcmem runs itself — the CLI and everything under it, the TUI, ``pcmem serve``, ``pcmem mcp``,
  the benchmarks, and every process they start, which inherit it — also ``HF_HUB_OFFLINE=1`` (the model hub's
  client refuses to download) and ``DO_NOT_TRACK=1`` (the convention other tools honour).

A variable the user set is never changed, whatever its value: an explicit ``HF_HUB_OFFLINE=0`` is how a user lets
``--embedder fastembed:MODEL`` download its model once. A setting that turns telemetry back on is reported by
:func:`problems` (for ``pcmem doctor``), as is an onnxruntime imported before pcmem, which pcmem cannot undo: that
one is also logged once, as a warning, when pcmem is imported.

Found by reading the dependencies (fastembed, huggingface_hub, onnxruntime, llama_cpp, textual, mcp, uvicorn,
fastapi) for telemetry and network calls at import: onnxruntime is the only one that phones home on its own;
huggingface_hub sends telemetry only with a download, which pcmem never asks for; fastapi's and mcp's OpenTelemetry
export nothing unless the user configures an exporter. tests/trust/test_offline.py runs every surface under strace.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping

#: Set in every process that imports pcmem: they only switch telemetry off.
TELEMETRY_OFF: dict[str, str] = {"ORT_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
#: Also set in the processes pcmem runs itself (and inherited by the processes those start).
OWN_PROCESS: dict[str, str] = {"HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1"}

_TRUE = frozenset({"1", "true", "yes", "on"})  # what onnxruntime and huggingface_hub read as set (case aside)
#: Whether onnxruntime was already imported, with its telemetry on, when pcmem was: recorded by :func:`apply`.
_early_onnxruntime = False


def is_set(value: str | None) -> bool:
    return value is not None and value.strip().lower() in _TRUE


def apply(environ: MutableMapping[str, str] | None = None, *, own_process: bool = False) -> None:
    """Set the offline environment where the user left a variable unset (see the module's text); ``own_process``:
    this is a process pcmem runs (the CLI's entry point says so), not an application that imports it."""
    global _early_onnxruntime
    environ = os.environ if environ is None else environ
    if not own_process and "onnxruntime" in sys.modules and not is_set(environ.get("ORT_DISABLE_TELEMETRY")):
        if not _early_onnxruntime:
            import logging  # here: ``import pcmem`` stays cheap (a cold CLI call pays every import)

            logging.getLogger(__name__).warning(_EARLY_ONNXRUNTIME)
        _early_onnxruntime = True
    for name, value in {**TELEMETRY_OFF, **(OWN_PROCESS if own_process else {})}.items():
        environ.setdefault(name, value)


_EARLY_ONNXRUNTIME = ("onnxruntime was imported before pcmem, with its telemetry on: it may send usage data to "
                      "Microsoft from this process. Set ORT_DISABLE_TELEMETRY=1 before importing it, or import pcmem "
                      "first")


def telemetry_off(environ: Mapping[str, str] | None = None) -> bool:
    """Whether onnxruntime's telemetry is off in this environment (it reads ``ORT_DISABLE_TELEMETRY`` when it loads)."""
    return is_set((os.environ if environ is None else environ).get("ORT_DISABLE_TELEMETRY"))


def onnxruntime_imported_first() -> bool:
    """Whether onnxruntime was already loaded, with its telemetry on, when pcmem was imported (pcmem cannot undo it)."""
    return _early_onnxruntime


def problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """What keeps this process from being offline, one sentence each (empty: nothing): for ``pcmem doctor``."""
    environ = os.environ if environ is None else environ
    found = [_EARLY_ONNXRUNTIME] if _early_onnxruntime else []
    found += [f"{name}={environ[name]!r} is set: it turns {what} back on" for name, what in (
        ("ORT_DISABLE_TELEMETRY", "onnxruntime's telemetry to Microsoft"),
        ("HF_HUB_DISABLE_TELEMETRY", "the model hub client's telemetry"),
    ) if name in environ and not is_set(environ[name])]
    if "HF_HUB_OFFLINE" in environ and not is_set(environ["HF_HUB_OFFLINE"]):
        found.append(f"HF_HUB_OFFLINE={environ['HF_HUB_OFFLINE']!r} is set: the model hub client may download "
                     "(only --embedder fastembed:MODEL asks it to)")
    return found
