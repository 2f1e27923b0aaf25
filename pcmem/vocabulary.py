"""The closed sets and bounds a search request takes — its modes, its limit — as plain values (the rerank policies
are declared in :mod:`pcmem.rerank_policies`).

Defined once, here, because two readers enforce them: the pydantic models (:mod:`pcmem.types.search`,
:mod:`pcmem.types.rerank`) and the command line's options, which a ``pcmem search`` answered by the store's owner
parses without importing pydantic. Neither restates them.
"""

from __future__ import annotations

from typing import Literal, get_args

SearchMode = Literal["auto", "fts", "vector", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)

#: The most hits one search returns (``limit`` is 1..this).
MAX_SEARCH_LIMIT = 50
#: The hits a search returns when the request does not say.
DEFAULT_SEARCH_LIMIT = 10
