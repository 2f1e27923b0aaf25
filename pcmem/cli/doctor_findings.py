"""What ``pcmem doctor`` reports: one finding per check, its status, one line of what was found and what to do.

Statuses: ``ok`` (✓), ``info`` (·: a fact, nothing to do unless you want what it names), ``warn`` (!: works, but
worth fixing), ``fail`` (✗: something pcmem needs is wrong). The JSON document (:data:`SCHEMA`) is stable: new checks
may appear, a check's ``id`` and the fields never change meaning.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["ok", "info", "warn", "fail"]
#: The version of the ``--json`` document's layout.
SCHEMA = 1
_SYMBOLS: dict[Status, str] = {"ok": "✓", "info": "·", "warn": "!", "fail": "✗"}
_ASCII: dict[Status, str] = {"ok": "+", "info": "-", "warn": "!", "fail": "x"}
#: ``pcmem doctor``'s exit status when any check failed (docs/reference/exit-statuses.md: 1 = problems found).
EXIT_PROBLEMS = 1


@dataclass(frozen=True)
class Finding:
    id: str  # a stable name, e.g. "store.file"
    status: Status
    summary: str
    fix: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "summary": self.summary, "fix": self.fix, "data": self.data}


def ok(check: str, summary: str, **data: Any) -> Finding:
    return Finding(check, "ok", summary, None, data)


def info(check: str, summary: str, fix: str | None = None, **data: Any) -> Finding:
    return Finding(check, "info", summary, fix, data)


def warn(check: str, summary: str, fix: str | None = None, **data: Any) -> Finding:
    return Finding(check, "warn", summary, fix, data)


def fail(check: str, summary: str, fix: str | None = None, **data: Any) -> Finding:
    return Finding(check, "fail", summary, fix, data)


def line(finding: Finding, symbols: dict[Status, str] | None = None) -> str:
    """``✗ summary — fix`` on one line."""
    marks = symbols or _symbols()
    dash = " — " if marks is _SYMBOLS else " -- "
    return f"{marks[finding.status]} {finding.summary}" + (f"{dash}{finding.fix}" if finding.fix else "")


def document(findings: list[Finding], version: str) -> dict[str, Any]:
    counts = {status: sum(1 for f in findings if f.status == status) for status in _SYMBOLS}
    return {"schema": SCHEMA, "pcmem": version, "ok": counts["fail"] == 0, "counts": counts,
            "checks": [finding.as_json() for finding in findings]}


def exit_status(findings: list[Finding]) -> int:
    return EXIT_PROBLEMS if any(finding.status == "fail" for finding in findings) else 0


def _symbols() -> dict[Status, str]:
    """The check marks, or ASCII ones where stdout cannot encode them (a legacy code page, PYTHONIOENCODING=ascii)."""
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "".join(_SYMBOLS.values()).encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return _ASCII
    return _SYMBOLS
