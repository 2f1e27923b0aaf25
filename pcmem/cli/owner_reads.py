"""``pcmem search`` and ``pcmem show`` answered by the store's owner without the library's client: one frame out,
the result's JSON back.

Why: these are the commands agents run most, once per question, and beside a running owner (an agent's ``pcmem mcp``,
the TUI, an app) the owner does all the work. The client runtime (:mod:`pcmem.owner.client`) is built from the
library's pydantic models, and importing pydantic alone costs a cold call more than half of the Python + DuckDB floor
it is measured against. Here the command sends the frame the client would send
(:class:`pcmem.owner.client.Caller`: the arguments as the models dump them) and prints the owner's answer, which *is*
the result as its model dumps it to JSON — so ``--json`` and the text print exactly what the full path prints.

Only the common call takes this path: a search without filters or reranker, an entry shown by its id (not by a
citation); no ``--embedder`` and no runtime setting in the environment (those are validated and applied by the
models, so they take the full path rather than a second copy of the rules here). Whatever is not answered here — no
owner, an unusual option — goes the full way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, cast

from pcmem.settings import lock_timeout, runtime_configured
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


def answered_by_owner(store: Any, frame: Callable[[], dict[str, Any]]) -> Any:
    """The owner's result for the read ``frame()`` builds (it checks the arguments first, as the full path does),
    or :data:`NOT_HERE` (the caller runs the command the full way). ``store``: the command's
    :class:`pcmem.cli.StoreContext`."""
    # the runtime settings are validated and applied by pcmem.config's models: such calls go the full way
    if store.embedder is not None or runtime_configured():
        return NOT_HERE
    waited = lock_timeout()  # a bad $PCMEM_LOCK_TIMEOUT is refused here as on the full path
    from pcmem.errors import PcmemError
    from pcmem.owner.dial import NO_OWNER, ask_owner
    from pcmem.store.engine import holder_of

    request = frame()
    try:
        engine, location = store.located()
    except PcmemError:
        return NOT_HERE  # the full path says what is wrong with the target
    if not engine.single_file or location.path is None:
        return NOT_HERE  # a database its engine serves: no owner to ask
    result = ask_owner(location.path, request, holder_of(engine, location), lock_timeout=waited)
    return NOT_HERE if result is NO_OWNER else result


#: What :func:`answered_by_owner` returns when the command is not answered here.
NOT_HERE: Any = object()


def search_answered(store: Any, scopes: Sequence[str], query: str, *, limit: int, mode: SearchMode,
                    fusion: str | None, filtered: bool, rerank: str | None, rerank_embedder: str | None,
                    model: str | None) -> dict[str, Any] | None:
    """The search page's JSON when the owner answered it here, else ``None``."""
    if filtered or rerank not in (None, "none") or rerank_embedder is not None or model is not None:
        return None
    page = answered_by_owner(store, lambda: search_frame(scopes, search_request(query, limit, mode, fusion)))
    return None if page is NOT_HERE else cast(dict[str, Any], page)


def entry_frame(scope: str, entry_id: str, revision: int | None) -> dict[str, Any]:
    """The frame :class:`pcmem.owner.client.Caller` sends for ``for_scope(scope).get_entry(entry_id, revision)``
    (the scope's name checked here as the client's scope handle checks it; the owner checks the rest)."""
    return {"op": "scope.get_entry", "scope": validate_scope(scope), "args": {"entry_id": entry_id, "revision": revision},
            "rerank": None}


def entry_answered(store: Any, scope: str, ref: str, revision: int | None) -> dict[str, Any] | None:
    """``pcmem show``'s entry as JSON when the owner answered it here, else ``None``. A REF with a ``/`` may be a
    citation: the full path parses it (:meth:`pcmem.types.memory.Citation.parse`) and decides."""
    if "/" in ref:
        return None
    entry = answered_by_owner(store, lambda: entry_frame(scope, ref, revision))
    return None if entry is NOT_HERE else cast(dict[str, Any], entry)


def filtered(kinds: Sequence[str], where: Sequence[str], created_from: datetime | None,
             created_before: datetime | None) -> bool:
    """Whether a search has filters (checked by the request model; see the module docstring)."""
    return bool(kinds or where or created_from or created_before)
