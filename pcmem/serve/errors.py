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
        return Failure(422, "capability_not_supported", str(error), {"capability": error.capability})
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
    "revision_conflict": "The entry changed since you read it. Read it again (search_memory or "
                         "list_memory_entries give its current citation and version), check your change still "
                         "applies, then retry with the new citation and expected_version.",
    "memory_entry_inactive": "The entry is retired; reactivate_memory_entry brings it back, or call "
                             "list_memory_entries to see the active entries.",
    "memory_not_found": "Check scope_id (list_scopes shows them) and copy the citation unchanged from "
                        "list_memory_entries or search_memory; a forgotten entry no longer exists.",
    "invalid_request": "Fix the arguments as the message says and call the tool again.",
    "capability_not_supported": "This store cannot search in that mode; retry with mode 'auto' or 'fts'.",
    "inference_timeout": "The local model took too long; retry the search once, or search again later.",
    "inference_unavailable": "A local model is not available; retry later or tell the user to check `pcmem check`.",
    "store_unavailable": "The store could not be read or written; tell the user to run `pcmem check`.",
    "internal_error": "This is a bug in pcmem; do not retry the same call.",
}

#: Advice that depends on the tool as well: a new entry has no citation to refresh.
TOOL_ADVICE = {
    ("remember_memory", "revision_conflict"):
        "The scope changed since the expected_revision you gave. Read its head revision (memory.revision in a "
        "list_memory_entries or search_memory result), check the entry is still needed, then retry with that "
        "expected_revision, or leave expected_revision out to add the entry whatever the head is.",
}


def tool_error_text(failure: Failure, tool: str = "") -> str:
    advice = TOOL_ADVICE.get((tool, failure.code)) or ADVICE.get(failure.code, "")
    details = f" details: {failure.details}." if failure.details else ""
    return f"{failure.code} ({failure.status}): {failure.message}.{details} {advice}".strip()
