"""Embedder presets from other distributions: the ``pcmem.embedders`` entry point group (as harlequin finds its
adapters and llm its models).

A plugin's ``pyproject.toml`` names an :class:`~pcmem.embedding.preset_declaration.EmbedderPreset`, or a sequence
of them::

    [project.entry-points."pcmem.embedders"]
    my-model = "my_package.presets:PRESET"

The group is read once per process, and only when a name, a profile or a listing is not answered by the presets
pcmem ships: opening a store of a shipped preset never reads the installed distributions' metadata. A plugin that
fails to load is skipped with a warning naming it (logged as ``pcmem``: one line on stderr when nothing
configured logging); the others still load.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from pcmem.embedding.preset_declaration import EmbedderPreset
from pcmem.errors import PcmemError

GROUP = "pcmem.embedders"
log = logging.getLogger("pcmem")

_loaded = False
_lock = threading.RLock()  # re-entrant: registering a plugin's preset looks the names up again


def load(register: Callable[[EmbedderPreset], None]) -> bool:
    """Register every plugin's presets, the first time only; whether this call loaded them (``False``: already
    loaded, so looking again finds nothing new)."""
    global _loaded
    with _lock:
        if _loaded:
            return False
        _loaded = True
        from importlib.metadata import entry_points

        for entry in entry_points(group=GROUP):
            try:
                for preset in _presets(entry.load()):
                    register(preset)
            except (Exception, PcmemError) as error:  # noqa: BLE001 - one broken plugin must not stop the others
                log.warning("pcmem: the embedder plugin %s (%s) was skipped: %s", entry.name, entry.value, error)
        return True


def _presets(found: Any) -> Iterable[EmbedderPreset]:
    presets = (found,) if isinstance(found, EmbedderPreset) else tuple(found)
    wrong = [type(preset).__name__ for preset in presets if not isinstance(preset, EmbedderPreset)]
    if wrong:
        raise TypeError(f"it names {', '.join(wrong)}, not pcmem EmbedderPreset declarations")
    return presets


def forget_loaded() -> None:
    """Read the group again at the next miss (tests install a plugin mid-process)."""
    global _loaded
    with _lock:
        _loaded = False
