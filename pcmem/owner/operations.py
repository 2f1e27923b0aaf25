"""The one table of what crosses the socket: the Memory API's own methods, with their own pydantic types.

Nothing here restates a signature. Each operation is a public method of
:class:`~pcmem.memory.scoped.SyncScopedMemory` (``scope.*``) or :class:`~pcmem.memory.service.SyncMemoryService`
(``store.*``); its parameters and result are read from the method's annotations and (de)serialised with pydantic's
``TypeAdapter`` (``dump_python(mode="json")`` / ``validate_python``), so a request and a result are the same models
the library takes and returns. ``reranker`` and ``progress`` stay in the calling process: a reranker crosses as a
:class:`~pcmem.owner.rerank_spec.RerankSpec` the owner builds, progress is not reported across the socket.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pcmem.errors import InputError
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.memory.service import SyncMemoryService
from pcmem.owner.protocol import encode_error
from pcmem.owner.rerank_spec import RerankSpec
from pcmem.rerank.port import MemoryReranker

SCOPED_OPERATIONS = ("head", "list", "get", "get_entry", "changes", "history", "revisions", "tombstone", "search",
                     "remember", "revise", "retire", "reactivate", "forget", "forget_scope")
STORE_OPERATIONS = ("scopes", "search", "forget_scope", "search_fusion", "set_search_fusion", "warm")
#: Operations that change the store: after a lost connection only a repeatable one is sent again.
WRITES = frozenset({"remember", "revise", "retire", "reactivate", "forget", "forget_scope"})
#: Parameters that never cross the socket (see the module docstring).
LOCAL_PARAMETERS = frozenset({"reranker", "progress"})


@dataclass(frozen=True)
class Operation:
    """One method of the Memory API as the socket sees it (``key`` is ``scope.NAME`` or ``store.NAME``)."""

    key: str
    name: str
    on_scope: bool
    method: Callable[..., Any]
    signature: inspect.Signature
    parameters: dict[str, TypeAdapter[Any]]
    result: TypeAdapter[Any]

    @property
    def takes_reranker(self) -> bool:
        return "reranker" in self.signature.parameters

    def encode(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The call's arguments as (JSON for the wire, the local-only ones). A call the method could not take raises
        the TypeError a local call would."""
        bound = self.signature.bind(*args, **kwargs)
        wire: dict[str, Any] = {}
        local: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if name in LOCAL_PARAMETERS:
                local[name] = value
                continue
            try:
                wire[name] = self.parameters[name].dump_python(value, mode="json", warnings=False)
            except Exception:  # noqa: BLE001 - pydantic's serialisation errors vary; the message says what it was
                raise InputError(f"{self.name}: {name} = {type(value).__name__} cannot be sent to the process "
                                 "that owns the store") from None
        return wire, local

    def decode(self, wire: dict[str, Any]) -> dict[str, Any]:
        """Arguments from the wire. A value that does not validate is passed as it came, so the method refuses it
        with the same InputError a local call gets."""
        decoded = {}
        for name, value in wire.items():
            adapter = self.parameters.get(name)
            if adapter is None:
                raise InputError(f"{self.name} has no parameter {name!r}")
            try:
                decoded[name] = adapter.validate_python(value)
            except ValidationError:
                decoded[name] = value
        return decoded


@functools.cache
def operation(key: str) -> Operation:
    """The operation ``key`` (built on first use: a client pays only for what it calls)."""
    on, _, name = key.partition(".")
    names, owner_class = {"scope": (SCOPED_OPERATIONS, SyncScopedMemory),
                          "store": (STORE_OPERATIONS, SyncMemoryService)}.get(on, ((), object))
    if name not in names:
        raise InputError(f"the process that owns the store does not serve {key!r}")
    method = getattr(owner_class, name)
    hints = typing.get_type_hints(method)
    signature = inspect.signature(method)
    signature = signature.replace(parameters=list(signature.parameters.values())[1:])  # without self
    parameters = {p: TypeAdapter(hints[p]) for p in signature.parameters if p not in LOCAL_PARAMETERS}
    return Operation(key, name, on == "scope", method, signature, parameters, TypeAdapter(hints["return"]))


def repeatable(key: str, wire: dict[str, Any]) -> bool:
    """Whether sending the request again after a lost answer cannot apply it twice: a read; a write with an
    expected revision or version (a second attempt conflicts instead); a keyed upsert; a forget (idempotent)."""
    name = key.partition(".")[2]
    if name not in WRITES or name in ("forget", "forget_scope"):
        return True
    request = wire.get("request")
    # The request's fields come in it, or as keywords next to the identity (``revise("k", expected_version=2)``).
    fields = request if isinstance(request, dict) else wire
    if fields.get("expected_revision") is not None or fields.get("expected_version") is not None:
        return True
    if name != "remember":
        return False
    upsert = bool(wire.get("upsert") or fields.get("upsert"))
    entries = fields.get("entries", [fields])  # remember("text", entry_id=..., upsert=True): the keywords
    return upsert and all(isinstance(e, dict) and e.get("entry_id") is not None for e in entries)


class Dispatcher:
    """Runs requests on one runtime's Memory service (the owner's, or a client's own after it took the file over)."""

    def __init__(self, memory: SyncMemoryService, rerankers: Callable[[RerankSpec], MemoryReranker]) -> None:
        self.memory = memory
        self._rerankers = rerankers

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            op = operation(str(request.get("op")))
            args = op.decode(dict(request.get("args") or {}))
            if op.takes_reranker and request.get("rerank") is not None:
                args["reranker"] = self._rerankers(RerankSpec.model_validate(request["rerank"]))
            target = self.memory.for_scope(str(request.get("scope"))) if op.on_scope else self.memory
            value = op.method(target, **args)
            return {"result": op.result.dump_python(value, mode="json")}
        except Exception as error:  # noqa: BLE001 - every failure goes back to the caller, typed
            return {"error": encode_error(error)}
