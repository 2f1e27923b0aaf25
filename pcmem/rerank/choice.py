"""Which reranker one search uses, said with one parameter: ``reranker="default"`` (the runtime's, when it has one),
``reranker="none"`` (the coarse page, even when the runtime has a reranker) or a :class:`MemoryReranker` for this call.

It replaces two knobs for three states, ``reranker=None`` ("the default") and ``rerank=False`` ("none"), which stay
accepted for one release with a DeprecationWarning: :func:`chosen_reranker` is the one place that reads them.
"""

from __future__ import annotations

import sys
import warnings
from typing import Literal, TypeAlias

from pcmem.errors import InputError
from pcmem.rerank.port import MemoryReranker
from pcmem.validation import validate_flag

RerankerChoice: TypeAlias = MemoryReranker | Literal["default", "none"]
#: What ``search`` does when the caller names no reranker.
DEFAULT: Literal["default"] = "default"


def chosen_reranker(reranker: RerankerChoice | None, rerank: bool | None = None) -> RerankerChoice:
    """``reranker`` as one of the three choices, folding in the deprecated spellings (a DeprecationWarning each):
    ``reranker=None`` means ``"default"``; ``rerank=False`` means ``"none"`` (``rerank=True`` changes nothing).
    Raises InputError for a string that is neither choice or a ``rerank`` that is not a bool."""
    if rerank is not None:
        warnings.warn('search(rerank=...) is deprecated: pass reranker="none" for the coarse page', DeprecationWarning,
                      stacklevel=_callers_level())
        if not validate_flag(rerank, "rerank"):
            return "none"
    if reranker is None:
        warnings.warn('search(reranker=None) is deprecated: omit it, or pass reranker="default"', DeprecationWarning,
                      stacklevel=_callers_level())
        return DEFAULT
    if isinstance(reranker, str) and reranker not in ("default", "none"):
        raise InputError(f'reranker must be "default", "none" or a MemoryReranker, got {reranker!r}')
    return reranker


def _callers_level() -> int:
    """The warning's stack level of the first frame outside pcmem: the caller's line, however many of pcmem's own
    frames are between (a client's search, a method counted as one native call: pcmem.native_calls)."""
    level, frame = 2, sys._getframe(2)  # 1: chosen_reranker, which warns
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).partition(".")[0] == "pcmem":
        frame, level = frame.f_back, level + 1
    return level


def override(choice: RerankerChoice) -> MemoryReranker | None:
    """The reranker to use instead of the runtime's (``None``: the runtime's own); only for a choice that reranks."""
    return None if isinstance(choice, str) else choice
