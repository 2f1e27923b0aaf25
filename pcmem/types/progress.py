"""Progress callbacks, defined once: every long job reports through one of these two shapes."""

from __future__ import annotations

from collections.abc import Callable

#: Called with (done, total) while a job advances: bytes verified, texts embedded, candidates reranked, rows copied.
#: ``total`` 0 means unknown.
Progress = Callable[[int, int], None]

#: Called with (stage, done, total) by jobs of several stages (a model build, a TUI search with rerank).
StageProgress = Callable[[str, int, int], None]
