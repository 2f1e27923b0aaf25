"""The scale-out backend: OceanBase seekdb (embedded, server or cluster) through the ``pyseekdb`` extra.

Importing this package needs nothing beyond pcmem; the drivers load when a store is opened.
"""

from pcmem.store.seekdb.backend import SeekdbBackend
from pcmem.store.seekdb.engine import SeekdbTarget, is_seekdb_url, parse

__all__ = ["SeekdbBackend", "SeekdbTarget", "is_seekdb_url", "parse"]
