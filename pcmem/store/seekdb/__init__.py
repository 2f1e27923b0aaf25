"""The scale-out backend: OceanBase seekdb (embedded, server or cluster) through the ``pyseekdb`` extra.

Importing this package needs nothing beyond pcmem; ``SeekdbBackend`` (numpy, the engine's SQL) is imported on first
use, and the drivers when a store is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pcmem.store.seekdb.connector import SeekdbTarget, is_seekdb_url, parse

if TYPE_CHECKING:
    from pcmem.store.seekdb.backend import SeekdbBackend

__all__ = ["SeekdbBackend", "SeekdbTarget", "is_seekdb_url", "parse"]


def __getattr__(name: str) -> Any:
    if name == "SeekdbBackend":
        from pcmem.store.seekdb.backend import SeekdbBackend

        return SeekdbBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
