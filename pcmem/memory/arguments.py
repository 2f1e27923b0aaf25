"""One calling convention for every read and write of a scope: the identity positional and the options as keywords,
or a request object that carries both — and one check of a call's arguments, wherever the call is made.

``revise("k", text="Fridays", expected_version=2)`` means ``revise(ReviseRequest(entry_id="k", text="Fridays",
expected_version=2))``; ``list(state="all", limit=10)`` means ``list(ListRequest(state="all", limit=10))``. A request
*and* keywords for its fields is an InputError naming them: one call, one place that says what it means. The flags
that can only switch something on (``upsert``, ``allow_duplicates``) are the exception kept from before: given next
to a request, they switch it on.

:func:`canonical` is that check for every method of the Memory API, as its library method runs it (the same
functions, in the same order, so the same values are refused with the same error and message). A client of another
process's store (:mod:`pcmem.owner.operations`) runs it before sending a call and sends what it returns; the owner
runs it again on what arrives (the wire is not trusted). The MCP and HTTP surfaces can call it the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pcmem.errors import InputError
from pcmem.settings import SEARCH_FUSIONS
from pcmem.types.base import Request
from pcmem.types.context import ContextRequest, RecentRequest
from pcmem.types.memory import (
    MAX_PAGE_LIMIT,
    ChangesRequest,
    Citation,
    EntryRequest,
    ForgetRequest,
    HistoryRequest,
    ListRequest,
    NewEntry,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
)
from pcmem.types.search import SearchMemoryRequest
from pcmem.validation import validate_flag, validate_id, validate_revision, validate_scope

R = TypeVar("R", bound=Request)


def request_of(kind: type[R], value: object, method: str, identity: str | None, options: dict[str, Any]) -> R:
    """``value`` when it is a ``kind`` (no option may be given as well); else the ``kind`` built from ``value`` as its
    ``identity`` field (an id, a query) and the options given (``None`` = not given)."""
    given = {name: option for name, option in options.items() if option is not None}
    if isinstance(value, kind):
        if given:
            raise InputError(f"{method}: {', '.join(given)} go into the {kind.__name__}, not next to it")
        return value
    if identity is None and value is None:
        return kind(**given)
    if identity is not None and isinstance(value, str):
        return kind(**{identity: value}, **given)
    what = " or a str" if identity is not None else ""
    raise InputError(f"{method} takes a {kind.__name__}{what}, not {type(value).__name__}")


def search_request(request: SearchMemoryRequest | str, options: dict[str, Any]) -> SearchMemoryRequest:
    return request_of(SearchMemoryRequest, request, "search", "query", options)


def context_request(request: ContextRequest | str | None, options: dict[str, Any]) -> ContextRequest:
    """``context``'s request: a ContextRequest, or a query text (``None``: no query, the newest entries only) and
    the options given."""
    if request is None:
        return ContextRequest(**{name: value for name, value in options.items() if value is not None})
    return request_of(ContextRequest, request, "context", "query", options)


def list_request(request: ListRequest | None, options: dict[str, Any]) -> ListRequest:
    return request_of(ListRequest, request, "list", None, options)


def remember_request(request: RememberRequest | NewEntry | str, *, entry: dict[str, Any], upsert: bool,
                     allow_duplicates: bool, options: dict[str, Any]) -> RememberRequest:
    """What ``remember`` writes: a text and ``entry`` fields (kind, metadata, entry_id) make one NewEntry; the
    request ``options`` (expected_revision, reason) go with a text or a NewEntry, not next to a RememberRequest."""
    flags = {"upsert": validate_flag(upsert, "upsert"),
             "allow_duplicates": validate_flag(allow_duplicates, "allow_duplicates")}
    entry_fields = {name: value for name, value in entry.items() if value is not None}
    if isinstance(request, str):
        request = NewEntry(text=request, **entry_fields)
    elif entry_fields:
        raise InputError(f"{'/'.join(entry)} go into the {type(request).__name__}, not next to it")
    if isinstance(request, NewEntry):
        given = {name: value for name, value in options.items() if value is not None}
        return RememberRequest(entries=(request,), **flags, **given)
    if isinstance(request, RememberRequest):
        request = request_of(RememberRequest, request, "remember", None, options)
        switched_on = {name: True for name, on in flags.items() if on}
        return request.model_copy(update=switched_on) if switched_on else request
    raise InputError(f"remember takes a RememberRequest, a NewEntry or a str, not {type(request).__name__}")


def idempotency_key(value: object) -> str | None:
    """A write's idempotency key: ``None`` (none), or 1..128 printable ASCII characters without spaces (a uuid's
    hex, a payment API's key)."""
    return None if value is None else validate_id(value, "idempotency_key")


def expect(value: Any, kind: type, method: str) -> Any:
    if not isinstance(value, kind):
        raise InputError(f"{method} takes a {kind.__name__}, not {type(value).__name__}")
    return value


def check_limit(limit: object) -> int | None:
    """A page's ``limit`` given as a plain argument (``changes``): ``None``, or an integer in 1..100."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_LIMIT):
        raise InputError(f"limit must be an integer in 1..{MAX_PAGE_LIMIT}, got {limit!r}")
    return limit


def entry_of(entry_id: object, revision: object) -> tuple[str, int | None]:
    """``get_entry``'s entry id and revision, from an id and a revision or an :class:`EntryRequest`."""
    if isinstance(entry_id, EntryRequest):
        request = request_of(EntryRequest, entry_id, "get_entry", "entry_id", {"revision": revision})
        entry_id, revision = request.entry_id, request.revision
    return validate_id(entry_id), None if revision is None else validate_revision(revision)


def changes_of(since_revision: object, limit: object, cursor: object) -> tuple[int, int | None, Any]:
    """``changes``' since_revision, limit and cursor, from plain values or a :class:`ChangesRequest`."""
    if isinstance(since_revision, ChangesRequest):
        request = request_of(ChangesRequest, since_revision, "changes", "since_revision",
                             {"limit": limit, "cursor": cursor})
        since_revision, limit, cursor = request.since_revision, request.limit, request.cursor
    return validate_revision(since_revision, "since_revision"), check_limit(limit), cursor


def entry_id_of(value: object, kind: type[HistoryRequest] | type[ForgetRequest]) -> str:
    """The entry id of ``history`` / ``forget``: an id, or the request that names one."""
    return value.entry_id if isinstance(value, kind) else validate_id(value)


def scopes_of(scopes: Sequence[str]) -> tuple[str, ...]:
    """A several-scope search's scope names: at least one, each once, each a valid scope name."""
    if isinstance(scopes, str):
        raise InputError("scopes takes a list of scope names, not one string")
    names = tuple(validate_scope(scope) for scope in scopes)
    if not names or len(set(names)) != len(names):
        raise InputError("scopes must name at least one scope, each once")
    return names


def fusion_of(fusion: object) -> Any:
    if fusion is not None and fusion not in SEARCH_FUSIONS:
        raise InputError(f"unknown fusion {fusion!r}: one of {', '.join(SEARCH_FUSIONS)}")
    return fusion


# --- one check per method, as its library method runs it -------------------------------------------------------

Given = dict[str, Any]

#: The fields of a search request its method takes as keywords.
SEARCH_OPTIONS = ("limit", "mode", "kinds", "metadata", "created_from", "created_before", "fusion")


def _options(given: Given, *names: str) -> dict[str, Any]:
    return {name: given.get(name) for name in names}


def _request(given: Given) -> Any:
    """The call's first argument as given (each method's own check says what it may be)."""
    return given.get("request")


def _head_write(kind: type[ReviseRequest] | type[RetireRequest] | type[ReactivateRequest], method: str,
                *fields: str) -> Callable[[Given], Given]:
    names = (*fields, "expected_revision", "expected_version", "reason")
    return lambda given: {"request": request_of(kind, given.get("request"), method, "entry_id", _options(given, *names)),
                          "idempotency_key": idempotency_key(given.get("idempotency_key"))}


def _remember(given: Given) -> Given:
    request = remember_request(_request(given), entry=_options(given, "kind", "metadata", "entry_id"),
                               upsert=given.get("upsert", False), allow_duplicates=given.get("allow_duplicates", False),
                               options=_options(given, "expected_revision", "reason"))
    return {"request": request, "idempotency_key": idempotency_key(given.get("idempotency_key"))}


def _get_entry(given: Given) -> Given:
    entry_id, revision = entry_of(given.get("entry_id"), given.get("revision"))
    return {"entry_id": entry_id, "revision": revision}


def _changes(given: Given) -> Given:
    since, limit, cursor = changes_of(given.get("since_revision", 0), given.get("limit"), given.get("cursor"))
    return {"since_revision": since, "limit": limit, "cursor": cursor}


#: The fields of a context request its method takes as keywords.
CONTEXT_OPTIONS = ("max_bytes", "max_tokens", "relevant", "recent", "kinds", "mode", "explain")


def _recent(given: Given) -> Given:
    return {"request": request_of(RecentRequest, given.get("request"), "recent", None,
                                  _options(given, "limit", "since"))}


def _context(given: Given) -> Given:
    return {"request": context_request(given.get("request"), _options(given, *CONTEXT_OPTIONS))}


def _search(given: Given) -> Given:
    # the reranker is the caller's choice: pcmem.rerank.choice checks it
    return {"request": search_request(_request(given), _options(given, *SEARCH_OPTIONS))}


_CANONICAL: dict[str, Callable[[Given], Given]] = {
    "scope.list": lambda given: {"request": list_request(given.get("request"),
                                                         _options(given, "state", "revision", "limit", "cursor"))},
    "scope.get": lambda given: {"citation": expect(given.get("citation"), Citation, "get")},
    "scope.get_entry": _get_entry,
    "scope.changes": _changes,
    "scope.history": lambda given: {"entry_id": entry_id_of(given.get("entry_id"), HistoryRequest)},
    "scope.tombstone": lambda given: {"entry_id": validate_id(given.get("entry_id"))},
    "scope.search": _search,
    "scope.recent": _recent,
    "scope.context": _context,
    "scope.remember": _remember,
    "scope.revise": _head_write(ReviseRequest, "revise", "text", "kind", "metadata"),
    "scope.retire": _head_write(RetireRequest, "retire"),
    "scope.reactivate": _head_write(ReactivateRequest, "reactivate"),
    "scope.forget": lambda given: {"entry_id": entry_id_of(given.get("entry_id"), ForgetRequest),
                                   "idempotency_key": idempotency_key(given.get("idempotency_key"))},
    "scope.forget_scope": lambda given: {"idempotency_key": idempotency_key(given.get("idempotency_key"))},
    "store.search": lambda given: {**_search(given), "scopes": scopes_of(given.get("scopes", ()))},
    "store.recent": lambda given: {**_recent(given), "scopes": scopes_of(given.get("scopes", ()))},
    "store.context": lambda given: {**_context(given), "scopes": scopes_of(given.get("scopes", ()))},
    "store.forget_scope": lambda given: {"scope": validate_scope(given.get("scope")),
                                         "idempotency_key": idempotency_key(given.get("idempotency_key"))},
    "store.set_search_fusion": lambda given: {"fusion": fusion_of(given.get("fusion"))},
}


def canonical(key: str, given: Given) -> Given:
    """The arguments a Memory method runs on, checked as the library method checks them: ``key`` is the method
    (``scope.revise``, ``store.search``: see :mod:`pcmem.owner.operations`), ``given`` its arguments by parameter
    name, leaving out the reranker and progress (what is absent is the default).

    Returns the same method's arguments by parameter name: a request object in place of the fields given as
    keywords, ids and names validated, ``idempotency_key`` checked. Calling the method with them does what calling it
    with ``given`` does; :func:`canonical` of its own result returns it unchanged. Raises InputError, as the method
    would, for a value it refuses. A method without a check of its own (one without arguments) returns ``given``."""
    check = _CANONICAL.get(key)
    return check(given) if check is not None else dict(given)
