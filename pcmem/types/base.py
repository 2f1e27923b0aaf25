"""The base of every request and response model: immutable pydantic models that reject unknown fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pcmem.errors import InputError


class Frozen(BaseModel):
    """Every model turns pydantic's ValidationError into pcmem's InputError, so callers catch one error type
    (a ``Citation`` built with an int id is bad input, not a pydantic error)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise InputError(_describe(error)) from None


class Request(Frozen):
    """A request model (see :class:`Frozen` for errors)."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise InputError(_describe(error)) from None


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "request"
    message = str(first["msg"]).removeprefix("Value error, ")
    field = str(first["loc"][-1]) if first["loc"] else ""
    # pcmem's own validators already name the field; pydantic's generic messages ("Field required") do not.
    return message if field and message.startswith(field) else f"{where}: {message}"
