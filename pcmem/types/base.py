"""The base of every request and response model: immutable pydantic models that reject unknown fields, and the
field types requests share (one per kind of value, so each kind is checked the same way in every request)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo

from pcmem import validation
from pcmem.errors import InputError


def _revision(value: object, info: ValidationInfo) -> int:
    return validation.validate_revision(value, info.field_name or "revision")


def _count(value: object, info: ValidationInfo) -> int:
    return validation.validate_int(value, info.field_name or "value")


def _flag(value: object, info: ValidationInfo) -> bool:
    return validation.validate_flag(value, info.field_name or "value")


def _string(value: object, info: ValidationInfo) -> str:
    return validation.require_str(value, info.field_name or "value")


def _timestamp(value: object, info: ValidationInfo) -> datetime | str:
    return validation.validate_timestamp(value, info.field_name or "value")


def _entry_text(value: object) -> str:
    return validation.normalize_text(value)


def _entry_id(value: object) -> str:
    return validation.validate_id(value)


#: A revision number: an integer ≥ 0 (``True``, ``-1`` and ``"3"`` are refused).
Revision = Annotated[int, BeforeValidator(_revision)]
#: A count or a limit: an integer as such (``True``, ``1.0``, ``"5"`` are refused); bounds come with ``Field``.
Count = Annotated[int, BeforeValidator(_count)]
#: A switch: ``True`` or ``False`` as such (``"yes"``, ``1`` are refused — pydantic alone would coerce them).
Flag = Annotated[bool, BeforeValidator(_flag)]
#: Text as such (bytes are refused), for fields without a validator of their own (ids, cursors).
String = Annotated[str, BeforeValidator(_string)]
#: A point in time: a datetime or ISO 8601 text (what JSON carries); a number is refused, not read as Unix time.
Timestamp = Annotated[datetime, BeforeValidator(_timestamp)]
#: An entry's text: NFC-normalised and stripped, then 1..8192 UTF-8 bytes without control characters.
EntryText = Annotated[str, BeforeValidator(_entry_text)]
#: An entry id: 1..128 printable ASCII characters without spaces.
EntryId = Annotated[str, BeforeValidator(_entry_id)]
#: An entry kind: an open label such as "fact" or "preference", 1..128 characters.
Kind = Annotated[str, BeforeValidator(validation.validate_kind)]
#: Entry metadata: a JSON object of at most 4096 bytes serialised.
Metadata = Annotated[dict[str, Any], BeforeValidator(validation.validate_metadata)]
#: Why a write is made: at most 512 characters; blank text is no reason (``None``).
Reason = Annotated[str | None, BeforeValidator(validation.validate_reason)]


class Frozen(BaseModel):
    """Every model turns pydantic's ValidationError into pcmem's InputError, so callers catch one error type
    (a ``Citation`` built with an int id is bad input, not a pydantic error).

    ``defer_build``: a model's validator is built when it is first used, not at import, so a process pays only for
    the models it uses (a cold ``pcmem search`` uses a handful of pcmem's ~30). Every pcmem model sets it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise InputError(_describe(error)) from None


class Request(Frozen):
    """A request model (see :class:`Frozen` for errors). Its ints, bools and datetimes use the shared types above:
    pydantic's lax mode would read ``limit=True`` as 1, ``upsert="yes"`` as true and ``created_from=5`` as 1970."""


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "request"
    message = str(first["msg"]).removeprefix("Value error, ")
    field = str(first["loc"][-1]) if first["loc"] else ""
    # pcmem's own validators already name the field; pydantic's generic messages ("Field required") do not.
    return message if field and message.startswith(field) else f"{where}: {message}"


ModelT = TypeVar("ModelT", bound=BaseModel)


def without_validation(model: type[ModelT], **values: Any) -> ModelT:
    """A model built from values that were validated before (stored rows, another model's fields), without
    validating them again: every field must be given, with the type the field declares.

    Why not ``model_construct``: it loops over the fields in Python and costs more than validation itself, while a
    search builds a model per hit; this writes the values at once. It sets exactly what ``model_construct`` sets (the
    fields, the set of fields given, no extra and no private values)."""
    built = model.__new__(model)
    object.__setattr__(built, "__dict__", values)
    object.__setattr__(built, "__pydantic_fields_set__", set(values))
    object.__setattr__(built, "__pydantic_extra__", None)
    object.__setattr__(built, "__pydantic_private__", None)
    return built
