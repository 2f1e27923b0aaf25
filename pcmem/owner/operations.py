"""The one table of what crosses the socket: the Memory API's own methods, with their own pydantic types.

Nothing here restates a signature. Each operation is a public method of
:class:`~pcmem.memory.scoped.SyncScopedMemory` (``scope.*``) or :class:`~pcmem.memory.service.SyncMemoryService`
(``store.*``); its parameters and result are read from the method's annotations and (de)serialised with pydantic's
``TypeAdapter`` (``dump_python(mode="json")`` / ``validate_python``), so a request and a result are the same models
the library takes and returns. ``reranker`` and ``progress`` stay in the calling process: a reranker crosses as a
:class:`~pcmem.owner.rerank_spec.RerankSpec` the owner builds, progress is not reported across the socket.

One check of the arguments, on both sides: the client runs the library method's own check
(:func:`pcmem.memory.arguments.canonical`) before sending and sends what it returns (a request object for its
keywords), so it refuses what the library refuses, with the same error; the owner runs it again on what arrives —
the wire is never trusted, and nothing arriving is coerced (``true`` is not read as ``1``).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter

from pcmem.errors import InputError
from pcmem.memory.arguments import canonical
from pcmem.memory.awaited import api_methods
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.memory.service import SyncMemoryService
from pcmem.owner.protocol import Encoded, encode_error
from pcmem.owner.rerank_spec import RerankSpec
from pcmem.rerank.port import MemoryReranker

#: Every method of the Memory API crosses: a scope handle's (``scope.*``) and the whole store's (``store.*``).
SCOPED_OPERATIONS = api_methods(SyncScopedMemory)
STORE_OPERATIONS = api_methods(SyncMemoryService)
#: Operations that change the store: each crosses with an idempotency key (see :class:`pcmem.owner.client.Caller`).
WRITES = frozenset({"remember", "revise", "retire", "reactivate", "forget", "forget_scope"})
#: Parameters that never cross the socket as arguments (see the module docstring).
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
    #: The model a parameter's JSON object stands for (its annotation's first pydantic model: the request object).
    models: dict[str, type[BaseModel]]
    result: TypeAdapter[Any]

    @property
    def takes_reranker(self) -> bool:
        return "reranker" in self.signature.parameters

    @property
    def is_write(self) -> bool:
        return self.name in WRITES

    def encode(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The call's arguments as (JSON for the wire, the local-only ones), checked as the library method checks
        them: a call the library refuses raises its InputError here, and one the method could not take the TypeError
        a local call would."""
        bound = self.signature.bind(*args, **kwargs)
        local = {name: value for name, value in bound.arguments.items() if name in LOCAL_PARAMETERS}
        given = {name: value for name, value in bound.arguments.items() if name not in LOCAL_PARAMETERS}
        wire: dict[str, Any] = {}
        for name, value in canonical(self.key, given).items():
            try:
                wire[name] = self.parameters[name].dump_python(value, mode="json", warnings=False)
            except Exception:  # noqa: BLE001 - pydantic's serialisation errors vary; the message says what it was
                raise InputError(f"{self.name}: {name} = {type(value).__name__} cannot be sent to the process "
                                 "that owns the store") from None
        return wire, local

    def decode(self, wire: dict[str, Any]) -> dict[str, Any]:
        """Arguments from the wire, checked again as the library method checks them (the same InputError a local
        call gets). A JSON object where the method takes a request model (or a citation) is that model; every other
        value is passed as it came, never coerced."""
        given = {}
        for name, value in wire.items():
            if name not in self.parameters:
                raise InputError(f"{self.name} has no parameter {name!r}")
            model = self.models.get(name)
            given[name] = model(**value) if model is not None and isinstance(value, dict) else value
        return canonical(self.key, given)


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
    wired = [p for p in signature.parameters if p not in LOCAL_PARAMETERS]
    parameters = {p: TypeAdapter(hints[p]) for p in wired}
    models = {p: found[0] for p in wired if (found := _models(hints[p]))}
    return Operation(key, name, on == "scope", method, signature, parameters, models, TypeAdapter(hints["return"]))


def _models(hint: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation names, in order (``ReviseRequest | str`` → ``[ReviseRequest]``)."""
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return [hint]
    return [model for arg in typing.get_args(hint) for model in _models(arg)]


class Dispatcher:
    """Runs requests on one runtime's Memory service (the owner's, or a client's own after it took the file over)."""

    def __init__(self, memory: SyncMemoryService, rerankers: Callable[[RerankSpec], MemoryReranker]) -> None:
        self.memory = memory
        self._rerankers = rerankers

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            op = operation(str(request.get("op")))
            wire = request.get("args") or {}
            if not isinstance(wire, dict):
                raise InputError(f"the arguments of {op.name} must be a JSON object, not {type(wire).__name__}")
            args = op.decode(wire)
            if op.takes_reranker and request.get("rerank") is not None:
                args["reranker"] = self._rerankers(RerankSpec.model_validate(request["rerank"]))
            scope: Any = request.get("scope")  # for_scope checks it, as a client's scope handle does (never str()-ed)
            target = self.memory.for_scope(scope) if op.on_scope else self.memory
            value = op.method(target, **args)
            return {"result": Encoded(op.result.dump_json(value))}
        except Exception as error:  # noqa: BLE001 - every failure goes back to the caller, typed
            return {"error": encode_error(error)}
