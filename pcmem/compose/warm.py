"""``runtime.warm(scopes=...)``: pay before the user's first search what that search would pay — the embedding model
(seconds: it loads on first use) and each scope's in-process search views (a 10,000-entry scope's vectors and
postings are read from the file the first time it is searched).

A step at a time, so that an app sees progress and can stop it: first the model, then one scope after another. Each
step is one call of the Memory service's ``warm``, which the owner of the store runs when this process is its client
(see docs/guides/processes.md): the owner loads its model and its views, which are the ones that serve this process's
searches. A cancel is seen between steps; the step under way (a model load, a scope's read) finishes first.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from pcmem.errors import InputError
from pcmem.memory.service import SyncMemoryService
from pcmem.types.progress import Progress
from pcmem.types.search import WarmReport
from pcmem.validation import validate_scope


def warm(memory: SyncMemoryService, scopes: Sequence[str], progress: Progress | None,
         cancel: threading.Event | None) -> WarmReport:
    """The steps of :meth:`SyncRuntime.warm <pcmem.compose.runtime.SyncRuntime.warm>` on ``memory``."""
    if isinstance(scopes, str):
        raise InputError("scopes takes a list of scope names, not one string")
    names = tuple(dict.fromkeys(validate_scope(scope) for scope in scopes))  # refused before anything loads
    total = 1 + len(names)
    done = WarmReport()
    if progress is not None:
        progress(0, total)
    for step, batch in enumerate(((), *((name,) for name in names)), start=1):
        if cancel is not None and cancel.is_set():
            return done.model_copy(update={"cancelled": True})
        part = memory.warm(batch)
        done = WarmReport(model=part.model, scopes=done.scopes + part.scopes,
                          empty_scopes=done.empty_scopes + part.empty_scopes)
        if progress is not None:
            progress(step, total)
    return done
