"""What every chaos scenario counts (:class:`Tally`), and the read-back that checks its acknowledged writes.

Shared by the campaign (:mod:`pcmem_bench.chaos`) and its hostile-input scenario (:mod:`pcmem_bench.hostile`).
"""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pcmem
from pcmem.errors import PcmemError
from pcmem.types.memory import Citation
from pcmem_bench import crash


@dataclass
class Tally:
    scenario: str
    operations: int = 0
    acknowledged: int = 0
    found: int = 0
    typed_errors: Counter = field(default_factory=Counter)
    untyped_errors: list[str] = field(default_factory=list)
    checks: int = 0
    checks_failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: Writes sent again after a lost answer that were applied a second time (the proxy-drop trial; must be 0).
    applied_twice: int = 0
    #: Writes sent again whose answer was not the first application's (the proxy-drop trial; must be 0).
    wrong_outcomes: int = 0

    @property
    def ok(self) -> bool:
        return (self.acknowledged == self.found and not self.untyped_errors and not self.checks_failed
                and not self.applied_twice and not self.wrong_outcomes)

    def merge(self, other: Tally) -> None:
        self.operations += other.operations
        self.acknowledged += other.acknowledged
        self.found += other.found
        self.applied_twice += other.applied_twice
        self.wrong_outcomes += other.wrong_outcomes
        self.typed_errors.update(other.typed_errors)
        self.untyped_errors += other.untyped_errors
        self.checks += other.checks
        self.checks_failed += other.checks_failed

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["typed_errors"] = dict(sorted(self.typed_errors.items()))
        data["untyped_errors"] = self.untyped_errors[:10]
        data["untyped_error_count"] = len(self.untyped_errors)
        data["ok"] = self.ok
        return data


def attempt(tally: Tally, call: Callable[[], Any]) -> Any:
    """Run one operation; a pcmem error is counted by class, anything else is an untyped failure."""
    tally.operations += 1
    try:
        return call()
    except PcmemError as error:
        tally.typed_errors[type(error).__name__] += 1
    except Exception as error:  # noqa: BLE001 - counting them is the point of the campaign
        tally.untyped_errors.append(f"{type(error).__name__}: {error} @ {traceback.format_exc(limit=-2)!r}")
    return None


# --- one process: threads, several runtimes, async ------------------------------------------------------------------


def verify(path: Path, scope: str, acknowledged: Iterable[Citation], tally: Tally) -> None:
    """Read every acknowledged citation back exactly, then run ``check``."""
    try:
        with pcmem.open(path, embedder=None) as runtime:
            memory = runtime.memory.for_scope(scope)
            for citation in acknowledged:
                try:
                    if memory.get(citation).entry.entry_version_id == citation.entry_version_id:
                        tally.found += 1
                except PcmemError:
                    pass
            report = crash._file_backend(runtime).check()
    except PcmemError as error:
        tally.checks += 1
        tally.checks_failed.append(f"{type(error).__name__}: {error}")
        return
    tally.checks += 1
    if not report.ok:
        tally.checks_failed.append("; ".join(report.problems))
