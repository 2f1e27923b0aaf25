"""What an agent tool declares, and the registry of declared tools.

A tool is one decorated function: ``@tool(...)`` gives its name, what it is for, the shape it returns and its
argument model; the function is what it does, on the server's :class:`~pcmem.serve.operations.MemoryApi`. That one
declaration serves every surface: ``tools/list`` and ``tools/call`` over MCP (:mod:`pcmem.serve.mcp_tools`),
``POST /x/pcmem/tools/{name}`` (:mod:`pcmem.serve.app`), and ``pcmem mcp --help`` / ``--json``. The shipped tools
are in :mod:`pcmem.serve.tools`; this module imports no MCP SDK, FastAPI or uvicorn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from pcmem.errors import InputError

Json = dict[str, Any]
Call = Callable[[Any, Any], Awaitable[Json]]
F = TypeVar("F", bound=Call)


@dataclass(frozen=True)
class Tool:
    name: str
    #: What it is for and when to call it (every agent reads it on every session: short).
    summary: str
    #: The result's shape, as the description ends: ``Returns {returns}.`` (tests check it names the real keys).
    returns: str
    #: Its arguments, validated before :attr:`call` runs (the input schema is made from it).
    arguments: type[BaseModel]
    #: ``call(api, arguments)``: what it does, answering plain JSON; pcmem errors become tool errors.
    call: Call
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True

    @property
    def description(self) -> str:
        return f"{self.summary} Returns {self.returns}."


_declared: dict[str, Tool] = {}


def tool(name: str, summary: str, *, returns: str, arguments: type[BaseModel], read_only: bool = True,
         destructive: bool = False, idempotent: bool = True) -> Callable[[F], F]:
    """Declare the decorated ``async def f(api, args) -> dict`` as the tool ``name`` (see :class:`Tool`)."""

    def declare(call: F) -> F:
        register(Tool(name, summary, returns, arguments, call, read_only, destructive, idempotent))
        return call

    return declare


def register(declared: Tool) -> None:
    """Offer ``declared`` on every surface from now on (InputError when the name is taken)."""
    if declared.name in _declared:
        raise InputError(f"a tool named {declared.name!r} is already declared")
    _declared[declared.name] = declared


def unregister(name: str) -> None:
    """Withdraw a tool (a test's); the surfaces built after this no longer offer it."""
    _declared.pop(name, None)


def declared() -> tuple[Tool, ...]:
    """Every declared tool, in declaration order."""
    return tuple(_declared.values())


def named(name: str) -> Tool | None:
    return _declared.get(name)
