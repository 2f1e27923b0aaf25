"""One calling convention for every read and write of a scope: the identity positional and the options as keywords,
or a request object that carries both.

``revise("k", text="Fridays", expected_version=2)`` means ``revise(ReviseRequest(entry_id="k", text="Fridays",
expected_version=2))``; ``list(state="all", limit=10)`` means ``list(ListRequest(state="all", limit=10))``. A request
*and* keywords for its fields is an InputError naming them: one call, one place that says what it means. The flags
that can only switch something on (``upsert``, ``allow_duplicates``) are the exception kept from before: given next
to a request, they switch it on.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pcmem.errors import InputError
from pcmem.types.base import Request
from pcmem.types.context import ContextRequest
from pcmem.types.memory import ListRequest, NewEntry, RememberRequest
from pcmem.types.search import SearchMemoryRequest
from pcmem.validation import validate_flag

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
