"""pcmem errors → PowerContext's error codes and HTTP statuses, and the advice an agent gets with an MCP tool error.

The codes and statuses are PowerContext's (``server/app.py`` ``_map_domain_error``): 404 ``memory_not_found``,
409 ``revision_conflict`` / ``memory_entry_inactive``, 422 ``invalid_request`` / ``capability_not_supported``,
503 ``inference_timeout`` / ``inference_unavailable``; ``internal_error`` (500) only for what pcmem did not raise on
purpose, i.e. a bug. Messages never carry entry text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pcmem.errors import (
    CapabilityNotSupportedError,
    ConfigurationError,
    EmbeddingError,
    EntryStateError,
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
    """What the caller expected and what holds now, named for what they count: the scope's revision (``head``) or
    the entry's version (``current``)."""
    if error.expected is None and error.actual is None:
        return None
    if error.about == "version":
        return {"expected_version": error.expected, "current_version": error.actual}
    return {"expected_revision": error.expected, "head_revision": error.actual}


def failure_for(error: BaseException) -> Failure:
    """The wire form of any exception; order matters (subclasses first)."""
    if isinstance(error, ApiError):
        return Failure(error.status, error.code, error.message, error.details)
    if isinstance(error, EntryStateError):
        code = "memory_entry_active" if error.state == "active" else "memory_entry_inactive"
        return Failure(409, code, str(error), {"state": error.state})
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


#: What an agent should do next, by error code (the MCP tool error text ends with it). Every tool and field named
#: here exists (tests/serve/test_mcp_tool_text.py checks it against the tool declarations and the result shapes).
ADVICE = {
    "revision_conflict": "The entry changed since you read it. get_memory_entry (entry_id) gives its current text "
                         "and version: check your change still applies, then retry with that expected_version.",
    "memory_entry_inactive": "The entry is retired: reactivate_memory_entry brings it back; list_memory_entries "
                             "shows the active ones.",
    "memory_entry_active": "The entry is already active: nothing to do.",
    "memory_not_found": "Check scope_id (list_scopes names them) and entry_id (list_memory_entries and "
                        "search_memory give them). A forgotten entry is gone for good.",
    "invalid_request": "Fix the arguments as the message says and call the tool again.",
    "capability_not_supported": "This store cannot search in that mode; retry with mode 'auto'.",
    "inference_timeout": "The local model took too long; retry once, or later.",
    "inference_unavailable": "A local model is not available; retry later, or tell the user to run `pcmem check`.",
    "store_unavailable": "The store could not be read or written; tell the user to run `pcmem check`.",
    "unavailable": "pcmem could not do this now; tell the user the message.",
    "unknown_tool": "Call one of the tools the message lists.",
    "internal_error": "This is a bug in pcmem; do not retry the same call.",
}

#: Advice that depends on the tool and on what the conflict was about (the details' keys).
SCOPE_CONFLICT_ADVICE = ("The scope changed since the expected_revision you gave. list_memory_entries gives its "
                         "current revision: retry with it, or leave expected_revision out.")


def advice(failure: Failure, tool: str = "") -> str:
    """What the agent should do next after ``failure`` of ``tool``."""
    if failure.code == "revision_conflict" and (tool == "remember_memory"
                                                or "head_revision" in (failure.details or {})):
        return SCOPE_CONFLICT_ADVICE
    return ADVICE.get(failure.code, "")


def tool_error_text(failure: Failure, tool: str = "") -> str:
    """``code (status): message. details: {JSON}. advice`` — the text a model reads."""
    details = f" details: {json.dumps(failure.details, ensure_ascii=False)}." if failure.details else ""
    return f"{failure.code} ({failure.status}): {failure.message.rstrip('.')}.{details} {advice(failure, tool)}".strip()
