"""pcmem errors → PowerContext's error codes and HTTP statuses, and the advice an agent gets with an MCP tool error.

The codes and statuses are PowerContext's (``server/app.py`` ``_map_domain_error``): 404 ``memory_not_found``,
409 ``revision_conflict`` / ``memory_entry_inactive``, 422 ``invalid_request`` / ``capability_not_supported``,
503 ``inference_timeout`` / ``inference_unavailable``; ``internal_error`` (500) only for what pcmem did not raise on
purpose, i.e. a bug. Messages never carry entry text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pcmem.errors import (
    CapabilityNotSupportedError,
    ConfigurationError,
    EmbeddingError,
    InferenceError,
    InferenceTimeoutError,
    InputError,
    NotFoundError,
    PcmemError,
    RerankError,
    RevisionConflictError,
    StoreError,
)


class ApiError(Exception):
    """An error with its wire code already decided (raised by :mod:`pcmem.serve.operations`)."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details


@dataclass(frozen=True)
class Failure:
    status: int
    code: str
    message: str
    details: dict[str, Any] | None = field(default=None)

    def envelope(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


def conflict_details(error: RevisionConflictError) -> dict[str, Any] | None:
    if error.expected is None and error.actual is None:
        return None
    return {"expected_revision": error.expected, "head_revision": error.actual}


def failure_for(error: BaseException) -> Failure:
    """The wire form of any exception; order matters (subclasses first)."""
    if isinstance(error, ApiError):
        return Failure(error.status, error.code, error.message, error.details)
    if isinstance(error, RevisionConflictError):
        return Failure(409, "revision_conflict", str(error), conflict_details(error))
    if isinstance(error, NotFoundError):
        return Failure(404, "memory_not_found", str(error))
    if isinstance(error, CapabilityNotSupportedError):
        return Failure(422, "capability_not_supported", str(error), {"capability": getattr(error, "capability", None)})
    if isinstance(error, InputError):
        return Failure(422, "invalid_request", str(error))
    if isinstance(error, InferenceTimeoutError):
        return Failure(503, "inference_timeout", str(error))
    if isinstance(error, (InferenceError, RerankError, EmbeddingError, ConfigurationError)):
        return Failure(503, "inference_unavailable", str(error))
    if isinstance(error, StoreError):
        return Failure(503, "store_unavailable", str(error))
    if isinstance(error, PcmemError):
        return Failure(503, "unavailable", str(error))
    return Failure(500, "internal_error", "The Server failed.")


#: What an agent should do next, by error code (the MCP tool error text ends with it).
ADVICE = {
    "revision_conflict": "The Memory changed since you read it. Call list_memory_entries (or search_memory) again "
                         "to get the entry's citation at the head revision, then retry with that citation.",
    "memory_entry_inactive": "The entry is retired; only active entries can be revised or retired. Call "
                             "list_memory_entries to see the active entries.",
    "memory_not_found": "Check scope_id (list_scopes shows them) and copy the citation unchanged from "
                        "list_memory_entries or search_memory.",
    "invalid_request": "Fix the arguments as the message says and call the tool again.",
    "capability_not_supported": "This store cannot search in that mode; retry with mode 'auto' or 'fts'.",
    "inference_timeout": "The local model took too long; retry the search once, or search again later.",
    "inference_unavailable": "A local model is not available; retry later or tell the user to check `pcmem check`.",
    "store_unavailable": "The store could not be read or written; tell the user to run `pcmem check`.",
    "internal_error": "This is a bug in pcmem; do not retry the same call.",
}


def tool_error_text(failure: Failure) -> str:
    advice = ADVICE.get(failure.code, "")
    details = f" details: {failure.details}." if failure.details else ""
    return f"{failure.code} ({failure.status}): {failure.message}.{details} {advice}".strip()
