"""Which reranker one search uses, said with one parameter: ``reranker="default"`` (the runtime's, when it has one),
``reranker="none"`` (the coarse page, even when the runtime has a reranker) or a :class:`MemoryReranker` for this call.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pcmem.errors import InputError
from pcmem.rerank.port import MemoryReranker

RerankerChoice: TypeAlias = MemoryReranker | Literal["default", "none"]
#: What ``search`` does when the caller names no reranker.
DEFAULT: Literal["default"] = "default"


def reranker_choice(reranker: object) -> RerankerChoice:
    """``reranker`` checked as one of the three choices (InputError for anything else: ``None``, another string)."""
    if isinstance(reranker, str) and reranker in ("default", "none"):
        return reranker  # type: ignore[return-value]  # one of the two literals
    if reranker is None or isinstance(reranker, str) or not callable(getattr(reranker, "rerank", None)):
        raise InputError(f'reranker must be "default", "none" or a MemoryReranker, got {reranker!r}')
    return reranker  # type: ignore[return-value]  # an object with .rerank()


def override(choice: RerankerChoice) -> MemoryReranker | None:
    """The reranker to use instead of the runtime's (``None``: the runtime's own); only for a choice that reranks."""
    return None if isinstance(choice, str) else choice
