"""``pcmem search`` answered by the store's owner without the library's client: one frame out, the page's JSON back.

Why: a search is the command agents run most, once per question, and beside a running owner (an agent's ``pcmem mcp``,
the TUI, an app) the owner does all the work. The client runtime (:mod:`pcmem.owner.client`) is built from the
library's pydantic models, and importing pydantic alone costs a cold call more than half of the Python + DuckDB floor
it is measured against (issue #30). Here the command sends the frame the client would send
(:class:`pcmem.owner.client.Caller`: the request as the model dumps it) and prints the owner's answer, which *is* the
page as its model dumps it to JSON — so ``--json`` and the table print exactly what the full path prints.

Only the common call takes this path: no filters, no reranker, no ``--embedder``, and no runtime setting in the
environment (those are validated and applied by the models, so they take the full path rather than a second copy of
the rules here). Whatever is not answered here — no owner, an unusual option — goes the full way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pcmem.settings import CONFIG_ENVS, lock_timeout
from pcmem.validation import normalize_text, validate_scope
from pcmem.vocabulary import SearchMode


def search_request(query: str, limit: int, mode: SearchMode, fusion: str | None) -> dict[str, Any]:
    """A :class:`~pcmem.types.search.SearchMemoryRequest` without filters as its model dumps it to JSON (the field
    order is the model's); the query is checked and normalised by the model's own rule."""
    return {"query": normalize_text(query, "query"), "limit": limit, "mode": mode, "kinds": None, "metadata": None,
            "created_from": None, "created_before": None, "fusion": fusion}


def search_frame(scopes: Sequence[str], request: dict[str, Any]) -> dict[str, Any]:
    """The frame :class:`pcmem.owner.client.Caller` sends for ``for_scope(scope).search(request)`` (one scope, its
    name checked here as the client's scope handle checks it) or ``search(request, scopes=...)`` (several: the owner
    checks them)."""
    if len(scopes) == 1:
        return {"op": "scope.search", "scope": validate_scope(scopes[0]), "args": {"request": request},
                "rerank": None}
    return {"op": "store.search", "scope": None, "args": {"request": request, "scopes": list(scopes)}, "rerank": None}


def answered_by_owner(store: Any, scopes: Sequence[str], query: str, *, limit: int, mode: SearchMode,
                      fusion: str | None, filtered: bool, rerank: str | None, rerank_embedder: str | None,
                      model: str | None) -> dict[str, Any] | None:
    """The page's JSON when the store's owner answered the search here, else ``None`` (the caller searches the full
    way). ``store``: the command's :class:`pcmem.cli.StoreContext`."""
    reranked = rerank not in (None, "none") or rerank_embedder is not None or model is not None
    # the runtime settings are validated and applied by pcmem.config's models: such calls go the full way
    configured = any(name in os.environ for name in CONFIG_ENVS)
    if filtered or reranked or configured or store.embedder is not None or not isinstance(store.path, Path):
        return None
    lock_timeout()  # a bad $PCMEM_LOCK_TIMEOUT is refused here as on the full path
    from pcmem.errors import PcmemError
    from pcmem.owner.dial import NO_OWNER, ask_owner
    from pcmem.store.duckdb.files import store_path

    frame = search_frame(scopes, search_request(query, limit, mode, fusion))
    try:
        path = store_path(store.path)
    except PcmemError:
        return None  # the full path says what is wrong with the path
    page = ask_owner(path, frame)
    return None if page is NO_OWNER else page


def filtered(kinds: Sequence[str], where: Sequence[str], created_from: datetime | None,
             created_before: datetime | None) -> bool:
    """Whether a search has filters (checked by the request model; see the module docstring)."""
    return bool(kinds or where or created_from or created_before)
